package main

import (
	"regexp"
	"strconv"
	"sync"

	"github.com/flowrun/flow/rundir"
)

// lastRE is how a command line names a run by its age: last is the
// latest run, last~1 the one before it.
var lastRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^last(?:~([0-9]+))?$`) })

// nthLatest resolves last and last~N among the runs under runsDir; ok is
// false when name is not of that form.
func nthLatest(runsDir, name string) (string, bool, error) {
	m := lastRE().FindStringSubmatch(name)
	if m == nil {
		return "", false, nil
	}
	n := 0
	if m[1] != "" {
		var err error
		if n, err = strconv.Atoi(m[1]); err != nil {
			return "", true, invalid("%s: %v", name, err)
		}
	}
	runs, err := rundir.Summaries(runsDir)
	if err != nil {
		return "", true, err
	}
	if n >= len(runs) {
		return "", true, invalid("no run %q in %s: it has %d run(s)", name, runsDir, len(runs))
	}
	return runs[n].Dir, true, nil
}
