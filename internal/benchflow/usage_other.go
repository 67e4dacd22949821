//go:build !unix

package main

import (
	"os"
	"time"
)

// usage reports no peak memory where the system gives no rusage.
func usage(ps *os.ProcessState) (rss int64, cpu time.Duration) {
	return 0, ps.UserTime() + ps.SystemTime()
}
