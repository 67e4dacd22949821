package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/reuse"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/runner"
	"github.com/flowrun/flow/schema"
)

type forkFlags struct {
	at      string
	inputs  []string // --input: JSON, or key=value
	fields  []string // -i key=value
	assign  []string // agent=model
	set     []string // VISIT=VALUE
	file    string
	timeout time.Duration
	json    bool
}

func (a *app) forkCmd() *cobra.Command {
	var f forkFlags
	cmd := &cobra.Command{
		Use:   "fork RUN --at VISIT",
		Short: "Run a run again from one of its visits, with another input, model or answer",
		Long: "Start a new run of RUN's flow (its snapshot, or --file) in which every visit the fork\n" +
			"point does not reach is answered from RUN at no cost, and the fork point and every\n" +
			"visit after it run again (docs/fork-and-diff.md). --set gives a visit's output without\n" +
			"running it. The new run records where it was forked from; flow diff compares the two.",
		Example: "  flow fork last --at b --input x=2\n" +
			"  flow fork RUN --at 'review#1/verdict' --set 'review#1/verdict={\"approved\": true, \"remarks\": []}'\n" +
			"  flow fork RUN --at 'write[2]/note' --assign note-writer=big",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return a.fork(cmd.Context(), args[0], f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.at, "at", "", "the visit to fork at, as flow show prints it (e.g. review#2/verdict)")
	fl.StringArrayVar(&f.inputs, "input", nil, "change the input: JSON (the whole input), or key=value (one field); repeatable")
	fl.StringArrayVarP(&f.fields, "field", "i", nil, "change one input field, key=value (repeatable)")
	fl.StringArrayVar(&f.assign, "assign", nil, "run an agent on another model, agent=model (repeatable)")
	fl.StringArrayVar(&f.set, "set", nil, "give a visit's output without running it, VISIT=VALUE (JSON for a typed output)")
	fl.StringVar(&f.file, "file", "", "run this flow file instead of RUN's snapshot of it")
	fl.DurationVar(&f.timeout, "timeout", 0, "bound on each agent turn (e.g. 90s, 10m)")
	fl.BoolVar(&f.json, "json", false, "write the event stream as JSON lines")
	return cmd
}

// forkPlan is what a fork is, checked whole before anything is made.
type forkPlan struct {
	origin  *rundir.RunInfo
	snap    *rundir.Snapshot
	plan    *flows.Plan
	input   any
	models  map[string]string
	sets    map[string]any
	reach   *reuse.Reach
	at      string
	changes []string
}

func (a *app) fork(ctx context.Context, name string, f forkFlags) error {
	if err := checkTimeout(f.timeout); err != nil {
		return err
	}
	fp, err := a.planFork(name, f)
	if err != nil {
		return err
	}
	if _, err := a.preflight(ctx, fp.plan); err != nil {
		return err
	}
	backend, err := a.local(runner.Fork(a.cfg.GetString("runs_dir"), fp.origin.Dir, fp.reach, fp.sets))
	if err != nil {
		return err
	}
	return a.execute(ctx, f.json, backend, func(ctx context.Context, opts engine.Options) (*engine.Result, error) {
		opts.Input = fp.input
		opts.Settings = a.runSettings(fp.snap.Settings.Model, f.timeout)
		opts.Settings.Models = fp.models
		opts.Repos = startsOf(fp.snap, fp.origin.Facts)
		opts.ForkedFrom = &record.Fork{Run: fp.origin.ID, Visit: fp.at, Changes: fp.changes}
		return backend.Start(ctx, fp.plan, runner.Host{RunsDir: a.cfg.GetString("runs_dir"), WorkDir: fp.snap.Settings.WorkDir}, opts)
	})
}

// planFork checks everything a fork is given against the run it forks:
// any misfit is exit 2 and nothing is made.
func (a *app) planFork(name string, f forkFlags) (*forkPlan, error) {
	dir, err := a.findRun([]string{name}, false)
	if err != nil {
		return nil, err
	}
	info, err := rundir.Inspect(dir)
	if err != nil {
		return nil, invalid("reading run %s: %v", name, err)
	}
	if info.Status == record.StatusRunning {
		return nil, invalid("run %s is still running: fork it once it has ended (flow show %s)", info.ID, info.ID)
	}
	snap, err := rundir.ReadSnapshot(dir)
	if err != nil {
		return nil, invalid("reading run %s: %v", info.ID, err)
	}
	fp := &forkPlan{origin: info, snap: snap, models: maps.Clone(snap.Settings.Models), sets: map[string]any{}}
	if f.file != "" {
		if fp.plan, err = a.load(f.file); err != nil {
			return nil, err
		}
		if fp.plan.Root.Name != snap.Flow {
			return nil, invalid("--file %s is flow %s, and run %s ran flow %s", f.file, fp.plan.Root.Name, info.ID, snap.Flow)
		}
		fp.changes = append(fp.changes, "file "+f.file)
	} else {
		plan, diags := flows.Reload(snap.File, snap.Sources(), snap.Agents, snap.Settings.WorkDir, a.loadOptions())
		if diags.HasErrors() {
			return nil, invalid("the snapshot of run %s does not load any more (fork it with --file):\n%s", info.ID, diags.Error())
		}
		fp.plan = plan
	}
	if f.at == "" && len(f.set) == 1 {
		f.at, _, _ = strings.Cut(f.set[0], "=")
	}
	if f.at == "" {
		return nil, invalid("give the visit to fork at: --at VISIT (flow show %s lists them)", info.ID)
	}
	if !hasVisit(info.Facts, f.at) {
		return nil, invalid("run %s has no visit %q: give one that flow show %s lists", info.ID, f.at, info.ID)
	}
	fp.at = f.at
	if fp.reach, err = reuse.NewReach(fp.plan, f.at); err != nil {
		return nil, invalid("--at %v", err)
	}
	if err := fp.changeInput(f); err != nil {
		return nil, err
	}
	for _, as := range f.assign {
		agent, model, ok := strings.Cut(as, "=")
		if !ok || agent == "" || model == "" {
			return nil, invalid("--assign %q: write agent=model", as)
		}
		if fp.plan.Agents[agent] == nil {
			return nil, invalid("--assign %s: flow %s has no agent %q (its agents: %s)", as, snap.Flow, agent, strings.Join(slices.Sorted(maps.Keys(fp.plan.Agents)), ", "))
		}
		if fp.models == nil {
			fp.models = map[string]string{}
		}
		fp.models[agent] = model
		fp.changes = append(fp.changes, "assign "+as)
	}
	for _, s := range f.set {
		if err := fp.setOutput(s); err != nil {
			return nil, err
		}
	}
	return fp, nil
}

// changeInput applies --input and -i to the run's input.
func (fp *forkPlan) changeInput(f forkFlags) error {
	in := fp.snap.Input
	field := func(kv string) error {
		k, v, _ := strings.Cut(kv, "=")
		if err := checkField(fp.plan.Root, k); err != nil {
			return invalid("--input %s: %v", kv, err)
		}
		m, ok := in.(map[string]any)
		if !ok {
			if in != nil {
				return invalid("--input %s: flow %s's input is not an object; give the whole input as JSON", kv, fp.plan.Root.Name)
			}
			m = map[string]any{}
		}
		m = maps.Clone(m)
		m[k] = fieldValue(fp.plan.Root.Input, k, v)
		in = m
		return nil
	}
	for _, raw := range f.inputs {
		if k, _, ok := strings.Cut(raw, "="); ok && k != "" && !strings.ContainsAny(k, "{[\" ") {
			if err := field(raw); err != nil {
				return err
			}
		} else if v, err := decodeExact([]byte(raw)); err == nil {
			in = v
		} else {
			in = raw // a string input
		}
		fp.changes = append(fp.changes, "input "+raw)
	}
	for _, kv := range f.fields {
		if !strings.Contains(kv, "=") {
			return invalid("-i %q: write key=value", kv)
		}
		if err := field(kv); err != nil {
			return err
		}
		fp.changes = append(fp.changes, "input "+kv)
	}
	checked, err := runner.CheckInput(fp.plan, in)
	if err != nil {
		return invalid("%v", err)
	}
	fp.input = checked
	return nil
}

// setOutput checks one --set VISIT=VALUE against the visit's node: a leaf
// the fork point reaches, and a value its output can hold.
func (fp *forkPlan) setOutput(s string) error {
	visit, raw, ok := strings.Cut(s, "=")
	if !ok || visit == "" {
		return invalid("--set %q: write VISIT=VALUE", s)
	}
	n := reuse.NodeAt(fp.plan, visit)
	if n == nil {
		return invalid("--set %s: flow %s has no visit %q", visit, fp.plan.Root.Name, visit)
	}
	if !fp.reach.Reaches(visit) {
		return invalid("--set %s: the fork point does not reach it, so its recorded output stands; fork at it or before it", visit)
	}
	var v any = raw
	switch {
	case n.AsAgent() != nil && n.AsAgent().Typed:
		x, err := decodeExact([]byte(raw))
		if err != nil {
			return invalid("--set %s: node %s's output is typed, and %q is not JSON: %v", visit, n.ID, raw, err)
		}
		if err := n.Output.Check(x); err != nil {
			return invalid("--set %s: the value does not fit node %s's output: %v", visit, n.ID, err)
		}
		v = x
	case n.AsRun() != nil:
		x, err := decodeExact([]byte(raw))
		if err == nil {
			err = runOutput.Check(x)
		}
		if err != nil {
			return invalid(`--set %s: a run node's output is {"passed": boolean, "exit": integer, "report": string}: %v`, visit, err)
		}
		v = x
	case n.AsAgent() == nil:
		return invalid("--set %s: node %s is a %s node; --set gives the output of an agent or run node", visit, n.ID, n.Kind)
	}
	fp.sets[visit] = v
	b, _ := json.Marshal(v)
	fp.changes = append(fp.changes, fmt.Sprintf("set %s=%s", visit, b))
	return nil
}

// runOutput is a run node's output type.
var runOutput = schema.ObjectOf(schema.F("passed", schema.BooleanType), schema.F("exit", schema.IntegerType), schema.F("report", schema.StringType))

func hasVisit(facts []*record.Fact, visit string) bool {
	for _, f := range facts {
		if f.Type == record.FactStart && f.Visit == visit {
			return true
		}
	}
	return false
}

// startsOf is where a fork's isolated scopes start in each repository:
// where the original run's started (its snapshot's, and those of the
// repositories it made while it ran), so that what a reused visit changed
// applies to the same files.
func startsOf(snap *rundir.Snapshot, facts []*record.Fact) map[string]string {
	starts := maps.Clone(snap.Repos)
	for _, f := range facts {
		w := f.Worktree
		if f.Type != record.FactWorktree || w == nil || w.Repo == "" || w.Base == "" {
			continue
		}
		if starts == nil {
			starts = map[string]string{}
		}
		if _, ok := starts[w.Repo]; !ok {
			starts[w.Repo] = w.Base
		}
	}
	return starts
}
