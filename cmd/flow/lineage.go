package main

import (
	"fmt"
	"strings"

	"github.com/flowrun/flow/rundir"
)

// forksOf keeps the runs forked from the run named (flow runs --forks-of).
func (a *app) forksOf(name string, runs []*rundir.RunInfo) ([]*rundir.RunInfo, error) {
	dir, err := a.findRun([]string{name}, false)
	if err != nil {
		return nil, err
	}
	id := dirName(dir)
	var out []*rundir.RunInfo
	for _, r := range runs {
		if r.ForkedFrom != nil && r.ForkedFrom.Run == id {
			out = append(out, r)
		}
	}
	return out, nil
}

// lineage says, for flow show, where a fork came from and which forks
// were made of a run: both ways (docs/fork-and-diff.md).
func (a *app) lineage(info *rundir.RunInfo) {
	if f := info.ForkedFrom; f != nil {
		line := fmt.Sprintf("forked from %s at %s", f.Run, f.Visit)
		if len(f.Changes) > 0 {
			line += " (" + strings.Join(f.Changes, "; ") + ")"
		}
		fmt.Fprintln(a.stdout, safeLine(line))
	}
	runs, err := rundir.Summaries(a.cfg.GetString("runs_dir"))
	if err != nil {
		return
	}
	var forks []string
	for _, r := range runs {
		if r.ForkedFrom != nil && r.ForkedFrom.Run == info.ID {
			forks = append(forks, r.ID+" at "+r.ForkedFrom.Visit)
		}
	}
	if len(forks) > 0 {
		fmt.Fprintln(a.stdout, safeLine("forks: "+strings.Join(forks, ", ")))
	}
}
