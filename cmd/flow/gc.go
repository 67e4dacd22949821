package main

import (
	"os"
	"runtime/debug"
)

// shortLived tunes the garbage collector for a command that loads a flow,
// answers and exits (validate, plan): collecting while loading a large
// flow was a fifth of the whole process's time, and the memory is given
// back at exit anyway. Collection starts only past 256 MiB, so a huge flow
// still loads in bounded memory. A GOGC or GOMEMLIMIT the user set wins.
func shortLived() {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(256 << 20)
	debug.SetGCPercent(-1)
}
