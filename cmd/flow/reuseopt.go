package main

import (
	"fmt"
	"strings"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/reuse"
	"github.com/flowrun/flow/rundir"
)

// reuseDirs resolves --reuse: "last" is the latest run of flow that is not
// running; otherwise a comma-separated list of run ids or directories.
func reuseDirs(runsDir, flow, spec string) ([]string, error) {
	if spec == "last" {
		runs, err := rundir.List(runsDir)
		if err != nil {
			return nil, err
		}
		for _, r := range runs {
			if r.Flow == flow && r.Status != rundir.StatusRunning && r.Status != rundir.StatusCorrupt {
				return []string{r.Dir}, nil
			}
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

// reusing wraps opts' leaves so that a visit an earlier run answered is
// answered from it (docs/reuse-and-tests.md).
func reusing(opts *engine.Options, dirs []string) error {
	set, err := reuse.Open(opts.RunsDir, dirs...)
	if err != nil {
		return err
	}
	next := opts.Leaves
	if next == nil {
		next = local.Leaves{Drivers: opts.Drivers, Commands: opts.Commands}
	}
	opts.Leaves = &reuse.Leaves{From: set, Next: next}
	return nil
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
