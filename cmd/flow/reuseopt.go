package main

import (
	"fmt"
	"strings"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
)

// reuseDirs resolves --reuse: "last" is the latest run of flow that is not
// running; otherwise a comma-separated list of run ids or directories.
func reuseDirs(runsDir, flow, spec string) ([]string, error) {
	if spec == "last" {
		// The newest runs only, not every journal (rundir.Latest).
		r, err := rundir.Latest(runsDir, func(r *rundir.RunInfo) bool {
			return r.Flow == flow && r.Status != record.StatusRunning && r.Status != record.StatusCorrupt
		})
		if err != nil {
			return nil, err
		}
		if r != nil {
			return []string{r.Dir}, nil
		}
		return nil, fmt.Errorf("--reuse: no earlier run of flow %q in %s to reuse", flow, runsDir)
	}
	var dirs []string
	for _, name := range strings.Split(spec, ",") {
		dir, ok := rundir.Find(runsDir, strings.TrimSpace(name))
		if !ok {
			return nil, fmt.Errorf("--reuse %s: no such run in %s", name, runsDir)
		}
		dirs = append(dirs, dir)
	}
	return dirs, nil
}

// savedLine says what a run saved by reusing visits, if it reused any.
func (a *app) savedLine(res *engine.Result) {
	if res == nil || res.Dir == "" {
		return
	}
	facts, err := rundir.ReadJournal(res.Dir)
	if err != nil {
		return
	}
	if sv := rundir.Saved(facts); sv.Visits > 0 {
		fmt.Fprintf(a.stderr, "\treused %d visit(s), saving %s tokens and %s\n", sv.Visits, rundir.TokensText(sv.Usage), rundir.CostText(sv.Usage))
	}
}
