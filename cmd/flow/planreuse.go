package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/reuse"
	"github.com/flowrun/flow/runner"
)

// planReuse says, before any spend, which visits of the flow a run with
// --reuse=spec would reuse and why the others would run: it walks the
// flow with nothing run (reuse.Dry), in a run directory it removes after.
// The input is the flags', else the reused run's.
func (a *app) planReuse(ctx context.Context, plan *flows.Plan, spec string, f runFlags, inputGiven, asJSON bool) error {
	isolated := false
	for _, fl := range plan.Flows {
		flows.EachNode(fl.Nodes, func(n *flows.Node) { isolated = isolated || n.Isolation })
	}
	if isolated {
		return invalid("flow plan --reuse does not walk a flow with isolated scopes: the walk would make their worktrees (docs/reuse-and-tests.md)")
	}
	dirs, err := reuseDirs(a.cfg.GetString("runs_dir"), plan.Root.Name, spec)
	if err != nil {
		return invalid("%v", err)
	}
	input, err := parseInput(plan.Root, f)
	if err != nil {
		return invalid("%v", err)
	}
	if !inputGiven {
		if in, err := reuse.CassetteInput(dirs[0]); err == nil && in != nil {
			input = in
		}
	}
	set, err := reuse.Open(a.cfg.GetString("runs_dir"), dirs...)
	if err != nil {
		return invalid("%v", err)
	}
	if a.temporalSettings(f.temporal).address != "" {
		// As flow run --reuse does on Temporal: the visits a run there
		// cannot take run live (docs/reuse-and-tests.md, "On Temporal").
		set = set.Remote()
	}
	tmp, err := os.MkdirTemp("", "flow-plan-reuse-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	dry := &reuse.Dry{From: set}
	backend, err := a.local(runner.Answered(dry))
	if err != nil {
		return err
	}
	var opts engine.Options
	opts.Input, opts.Settings = input, a.runSettings(f.model, f.timeout)
	if _, err := backend.Start(ctx, plan, runner.Host{RunsDir: tmp}, opts); err != nil {
		return invalid("%v", err)
	}
	ds := dry.Decisions()
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(ds)
	}
	reused := 0
	for _, d := range ds {
		if d.Reuse {
			reused++
		}
	}
	fmt.Fprintf(a.stdout, "%s with --reuse: %d of %d visits reused, %d run\n", plan.Root.Name, reused, len(ds), len(ds)-reused)
	for _, d := range ds {
		if d.Reuse {
			fmt.Fprintf(a.stdout, "  reuse  %s  (from %s)\n", d.Visit, d.From)
		} else {
			fmt.Fprintf(a.stdout, "  run    %s  %s\n", d.Visit, d.Reason)
		}
	}
	return nil
}
