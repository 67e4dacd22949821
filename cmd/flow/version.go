package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// version is what `flow --version` says: the module version the binary
// was built at (go install stamps it from the checkout's commit), and the
// commit and Go release it was built from, so that a bug report can say
// which flow it is about.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown) " + runtime.Version()
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return fmt.Sprintf("%s (%s)", v, info.GoVersion)
	}
	return fmt.Sprintf("%s (commit %s%s, %s)", v, rev, modified, info.GoVersion)
}
