package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/runner"
	"github.com/flowrun/flow/schema"
	"github.com/flowrun/flow/sweep"
)

type sweepFlags struct {
	runFlags
	models       []string
	assign       []string
	inputs       string
	params       []string
	repeat       int
	baseline     string
	cells        int
	budgetCost   float64
	budgetTokens int64
	pin          bool
	resume       string
	dryRun       bool
}

func (a *app) sweepCmd() *cobra.Command {
	var f sweepFlags
	cmd := &cobra.Command{
		Use:   "sweep FILE | --resume SWEEP",
		Short: "Run a flow over a grid of models, tasks and parameters, and compare the outcomes",
		Long: "Run the flow once per cell of a grid: model assignments (--model a,b puts every\n" +
			"agent on each model in turn; --assign AGENT=m1,m2 gives one agent its own list;\n" +
			"the grid is their product), tasks (--inputs tasks.jsonl, or one --input),\n" +
			"swept input fields (--param key=v1,v2) and repetitions (--repeat N); the flow's\n" +
			"sweep: section gives what the command line does not. Each cell is a run under\n" +
			".flow/sweeps/<sweep-id>/cells/. Before anything runs, the number of cells, the\n" +
			"worst-case turns and a forecast from earlier runs are printed; --budget-cost and\n" +
			"--budget-tokens bound the whole sweep. The reports (report.md, .csv, .json,\n" +
			".html) are rewritten after every cell. --pin writes the chosen assignment into\n" +
			"the flow's models:. With --temporal, each cell runs as a run on Temporal, its\n" +
			"visits on the flow workers (docs/temporal.md). See docs/sweeps.md.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case f.resume != "" && len(args) > 0:
				return invalid("give FILE or --resume SWEEP, not both")
			case f.resume != "":
				return a.resumeSweep(cmd, f)
			case len(args) == 0:
				return invalid("flow sweep needs a flow FILE (or --resume SWEEP)")
			}
			return a.sweep(cmd, args[0], f)
		},
	}
	fl := cmd.Flags()
	// Split by splitList, not as CSV: a CSV reader would end the list at a
	// newline and drop the rest without a word.
	fl.StringArrayVar(&f.models, "model", nil, "models to put every agent on, one per assignment (a,b,c; repeatable)")
	fl.StringArrayVar(&f.assign, "assign", nil, "one agent's models, AGENT=m1,m2 (repeatable; the grid is the product)")
	fl.StringVar(&f.inputs, "inputs", "", "a JSON Lines file of tasks: one input a line, with an optional id")
	fl.StringVar(&f.input, "input", "", "one task's input as JSON (or plain text for a string input)")
	fl.StringVar(&f.inputFile, "input-file", "", "read one task's input (JSON) from a file")
	fl.StringArrayVarP(&f.inputKV, "set", "i", nil, "one input field, key=value (repeatable)")
	fl.StringArrayVar(&f.params, "param", nil, "an input field to sweep, key=v1,v2 (repeatable)")
	fl.IntVar(&f.repeat, "repeat", 0, "runs of each cell (default the flow's sweep.repeat, else 1)")
	fl.StringVar(&f.baseline, "baseline", "", "the assignment to compare the others with (default the first)")
	fl.IntVar(&f.cells, "concurrency", 1, "cells run at once")
	fl.Float64Var(&f.budgetCost, "budget-cost", 0, "the most USD the whole sweep may spend")
	fl.Int64Var(&f.budgetTokens, "budget-tokens", 0, "the most tokens the whole sweep may spend")
	fl.DurationVar(&f.timeout, "timeout", 0, "bound on each agent turn (e.g. 90s, 10m)")
	fl.BoolVar(&f.pin, "pin", false, "when every cell has ended, write the chosen assignment into the flow's models:")
	fl.StringVar(&f.resume, "resume", "", "run the cells of sweep SWEEP (an id or directory) that did not end")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the grid and the forecast; run nothing")
	f.temporal.add(fl, "run every cell on Temporal, its visits on flow workers; with --resume, where the cells go on")
	return cmd
}

func (a *app) pinCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "pin SWEEP",
		Short: "Write the assignment a sweep chose into its flow's models:",
		Long: "Write into the flow file's models: (one line; the rest of the file is kept as\n" +
			"it is) the cheapest assignment on the sweep's cost-versus-success frontier whose\n" +
			"success is not significantly below the best's. See docs/sweeps.md for the rule.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, err := a.openSweep(args[0])
			if err != nil {
				return err
			}
			return a.pin(s)
		},
	}
}

func (a *app) sweepsDir() string { return a.cfg.GetString("sweeps_dir") }

func (a *app) openSweep(name string) (*sweep.Sweep, error) {
	dir, ok := sweep.Find(a.sweepsDir(), name)
	if !ok {
		return nil, invalid("no sweep %q in %s", name, a.sweepsDir())
	}
	s, err := sweep.Open(dir)
	if err != nil {
		return nil, invalid("%v", err)
	}
	return s, nil
}

func (a *app) sweep(cmd *cobra.Command, file string, f sweepFlags) error {
	plan, err := a.load(file)
	if err != nil {
		return err
	}
	o, err := overrides(cmd, plan, f)
	if err != nil {
		return invalid("%v", err)
	}
	spec, err := sweep.SpecFor(plan, o)
	if err != nil {
		return invalid("%v", err)
	}
	cfg := sweep.Config{Spec: spec, Budget: sweep.Budget{Tokens: f.budgetTokens, Cost: f.budgetCost}, Concurrency: f.cells, Timeout: f.timeout}
	if f.dryRun {
		// What the sweep would refuse, the dry run refuses.
		if err := sweep.Check(plan, cfg); err != nil {
			return invalid("%v", err)
		}
		as := spec.Assignments()
		cells := len(as) * len(spec.ParamSets()) * max(len(spec.Tasks), 1) * max(spec.Repeat, 1)
		return a.printForecast(plan, as, cells, a.runSettings("", f.timeout))
	}
	// Connect before the sweep is made: a wrong address leaves nothing.
	cfg.Temporal = a.sweepTemporal(f.temporal, false, nil)
	if cfg.Temporal == nil {
		// Locally, a driver that is missing fails every cell: say so first.
		if _, err := a.preflight(cmd.Context(), plan); err != nil {
			return err
		}
	}
	backend, done, err := a.sweepBackend(cfg.Temporal)
	if err != nil {
		return err
	}
	defer done()
	s, err := sweep.Create(a.sweepsDir(), plan, cfg)
	if err != nil {
		var ie *engine.InputError
		if errors.As(err, &ie) {
			return invalid("%v", err)
		}
		return err
	}
	defer func() { _ = s.Unlock() }()
	return a.runSweep(s, plan, backend, nil, f.pin)
}

func (a *app) resumeSweep(cmd *cobra.Command, f sweepFlags) error {
	s, err := a.openSweep(f.resume)
	if err != nil {
		return err
	}
	if err := s.Lock(); err != nil {
		var le *sweep.LockedError
		if errors.As(err, &le) {
			return invalid("%v", err)
		}
		return err
	}
	defer func() { _ = s.Unlock() }()
	for _, name := range []string{"model", "assign", "inputs", "input", "input-file", "set", "param", "repeat", "baseline", "concurrency", "timeout", "dry-run"} {
		if cmd.Flags().Changed(name) {
			return invalid("--%s does not go with --resume: a sweep resumes as it was made", name)
		}
	}
	if cmd.Flags().Changed("budget-cost") || cmd.Flags().Changed("budget-tokens") {
		if err := s.SetBudget(sweep.Budget{Tokens: f.budgetTokens, Cost: f.budgetCost}); err != nil {
			return err
		}
	}
	plan, notes, diags := s.LoadPlan(a.loadOptions())
	a.printDiagnostics(diags)
	if diags.HasErrors() {
		return invalid("the flow of sweep %s does not load", s.ID())
	}
	t := a.sweepTemporal(f.temporal, true, s.Snapshot().Temporal)
	backend, done, err := a.sweepBackend(t)
	if err != nil {
		return err
	}
	defer done()
	if err := s.SetTemporal(t); err != nil {
		return err
	}
	return a.runSweep(s, plan, backend, notes, f.pin)
}

// runSweep prints the forecast, runs the cells that have not ended
// through backend with Ctrl-C stopping them cleanly, and prints where the
// reports are.
func (a *app) runSweep(s *sweep.Sweep, plan *flows.Plan, backend runner.Backend, notes []string, pin bool) error {
	for _, n := range notes {
		fmt.Fprintln(a.stderr, "note: "+n)
	}
	f := s.Snapshot()
	base := s.Settings(a.cfg.GetDuration("timeout"))
	left := 0
	for _, c := range f.Cells {
		if !c.Status.Ended() {
			left++
		}
	}
	fmt.Fprintf(a.stderr, "sweep %s of %s: %s\n", s.ID(), f.Flow, gridText(f))
	if t := f.Temporal; t != nil {
		fmt.Fprintf(a.stderr, "cells run on Temporal at %s, task queue %s (workers: flow worker --temporal %s --task-queue %s)\n", t.Address, t.TaskQueue, t.Address, t.TaskQueue)
	}
	history, err := a.history(plan.Root.Name)
	if err != nil {
		return err
	}
	a.warnOverBudget(a.printForecastWith(plan, f.Assignments, left, base, history), f.Budget)

	sigCtx, sigStop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer sigStop()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	unhook := context.AfterFunc(sigCtx, func() { backend.Stop(cancel, runner.StopRun) })
	defer unhook()

	// The backend (the runner's) gives every cell what a run of this
	// process shares; the sweep gives each its input, and caps the live
	// turns across cells.
	opts := sweep.RunOptions{
		Settings: base, Load: a.loadOptions(), History: history, OnCell: a.cellLine, Backend: backend,
	}
	opts.Host.WorkDir, opts.Engine.Concurrency = f.WorkDir, a.cfg.GetInt("concurrency")
	runErr := s.Run(ctx, plan, opts)
	g := s.Snapshot()
	r := sweep.Build(g)
	fmt.Fprintf(a.stderr, "%s\n", countsText(r.Cells))
	a.printSummary(r)
	fmt.Fprintf(a.stderr, "reports: %s\ncells: %s (flow show <dir>)\n", strings.Join(s.Reports(), ", "), s.CellsDir())
	if runErr != nil {
		return runErr
	}
	switch {
	case ctx.Err() != nil:
		fmt.Fprintf(a.stderr, "interrupted: flow sweep --resume %s runs the cells that did not end\n", s.ID())
		return &exitError{code: exitInterrupted}
	case r.Cells.Skipped > 0:
		return &exitError{code: exitFailed, msg: fmt.Sprintf("%d cell(s) were not started: the budget could not cover them (flow sweep --resume %s %s runs them)", r.Cells.Skipped, s.ID(), budgetFlags(g.Budget))}
	case r.Cells.SetAside > 0:
		return &exitError{code: exitFailed, msg: fmt.Sprintf("%d cell(s) %s (flow sweep --resume %s runs them again)", r.Cells.SetAside, r.Cells.SetAsideText(), s.ID())}
	case pin:
		return a.pin(s)
	}
	return nil
}

// history is what earlier runs of the flow spent: its runs and every
// sweep's cells.
func (a *app) history(flow string) (*sweep.History, error) {
	dirs, err := sweep.CellsDirs(a.sweepsDir())
	if err != nil {
		return nil, err
	}
	return sweep.ReadHistory(flow, append([]string{a.cfg.GetString("runs_dir")}, dirs...)...)
}

func (a *app) pin(s *sweep.Sweep) error {
	choice, line, err := s.Pin(a.loadOptions())
	if err != nil {
		return &exitError{code: exitFailed, msg: "flow pin: " + err.Error()}
	}
	fmt.Fprintf(a.stderr, "pinned %s (%s) into %s: %s\n", choice.Assignment, choice.Reason, s.Snapshot().FlowFile, line)
	for _, w := range choice.Warnings {
		fmt.Fprintf(a.stderr, "warning: %s\n", w)
	}
	return nil
}

// overrides reads the grid the command line gives (sweep.SpecFor takes
// the rest from the flow's sweep: section).
func overrides(cmd *cobra.Command, plan *flows.Plan, f sweepFlags) (sweep.Overrides, error) {
	o := sweep.Overrides{Baseline: f.baseline}
	for _, m := range f.models {
		o.Models = append(o.Models, splitList(m)...)
	}
	for _, as := range f.assign {
		agent, list, ok := strings.Cut(as, "=")
		models := splitList(list)
		if !ok || agent == "" || len(models) == 0 {
			return o, fmt.Errorf("--assign %q: write AGENT=m1,m2", as)
		}
		o.Assign = append(o.Assign, flows.Assign{Agent: agent, Models: models})
	}
	for _, p := range f.params {
		key, list, ok := strings.Cut(p, "=")
		if !ok || key == "" || list == "" {
			return o, fmt.Errorf("--param %q: write key=v1,v2", p)
		}
		param := flows.Param{Key: key}
		for _, v := range splitList(list) {
			param.Values = append(param.Values, paramValue(plan.Root.Input, key, v))
		}
		o.Params = append(o.Params, param)
	}
	if cmd.Flags().Changed("repeat") {
		if f.repeat < 1 {
			return o, errors.New("--repeat must be at least 1")
		}
		o.Repeat = f.repeat
	}
	oneInput := f.input != "" || f.inputFile != "" || len(f.inputKV) > 0
	switch {
	case f.inputs != "" && oneInput:
		return o, errors.New("give --inputs or one --input, not both")
	case f.inputs != "":
		tasks, err := sweep.ReadTasks(f.inputs, sweep.KeepsID(plan))
		if err != nil {
			return o, err
		}
		o.Tasks = tasks
	case oneInput:
		in, err := parseInput(plan.Root, f.runFlags)
		if err != nil {
			return o, err
		}
		o.Tasks = []sweep.Task{{ID: "t1", Input: in}}
	}
	return o, nil
}

// paramValue reads a swept value as -i reads a field: JSON unless the
// field is declared a string.
func paramValue(t *schema.Type, key, v string) any {
	if t == nil {
		return v
	}
	return fieldValue(t, key, v)
}

func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}
