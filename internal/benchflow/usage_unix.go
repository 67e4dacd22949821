//go:build unix

package main

import (
	"os"
	"runtime"
	"syscall"
	"time"
)

// usage returns the peak resident set size in bytes and the CPU time (user
// plus system) of an ended process. The kernel's figures for a waited-for
// child include the children it waited for in turn (the `true`s); those are
// tiny, so the peak is the child's own.
func usage(ps *os.ProcessState) (rss int64, cpu time.Duration) {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, ps.UserTime() + ps.SystemTime()
	}
	rss = int64(ru.Maxrss)
	if runtime.GOOS != "darwin" { // Linux and the BSDs count KiB, macOS bytes.
		rss *= 1024
	}
	return rss, ps.UserTime() + ps.SystemTime()
}
