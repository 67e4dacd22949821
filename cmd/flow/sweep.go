package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
	"github.com/flowrun/flow/steps/run"
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
			"the flow's models:. See docs/sweeps.md.",
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
	fl.StringSliceVar(&f.models, "model", nil, "models to put every agent on, one per assignment (a,b,c)")
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
	spec, err := a.sweepSpec(cmd, plan, f)
	if err != nil {
		return invalid("%v", err)
	}
	cfg := sweep.Config{Spec: spec, Budget: sweep.Budget{Tokens: f.budgetTokens, Cost: f.budgetCost}, Concurrency: f.cells, Timeout: f.timeout}
	if f.dryRun {
		as := spec.Assignments()
		cells := len(as) * len(spec.ParamSets()) * max(len(spec.Tasks), 1) * max(spec.Repeat, 1)
		return a.printForecast(plan, as, cells, a.runSettings("", f.timeout))
	}
	s, err := sweep.Create(a.sweepsDir(), plan, cfg)
	if err != nil {
		var ie *engine.InputError
		if errors.As(err, &ie) {
			return invalid("%v", err)
		}
		return err
	}
	return a.runSweep(s, plan, nil, f.pin)
}

func (a *app) resumeSweep(cmd *cobra.Command, f sweepFlags) error {
	s, err := a.openSweep(f.resume)
	if err != nil {
		return err
	}
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
	return a.runSweep(s, plan, notes, f.pin)
}

// runSweep prints the forecast, runs the cells that have not ended with
// Ctrl-C stopping them cleanly, and prints where the reports are.
func (a *app) runSweep(s *sweep.Sweep, plan *flows.Plan, notes []string, pin bool) error {
	drivers, err := buildDrivers(a.drivers, a.cfg)
	if err != nil {
		return invalid("%v", err)
	}
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
	history, err := a.history(plan.Root.Name)
	if err != nil {
		return err
	}
	if err := a.printForecastWith(plan, f.Assignments, left, base, history); err != nil {
		return err
	}

	sigCtx, sigStop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer sigStop()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	unhook := context.AfterFunc(sigCtx, func() { cancel(engine.ErrStopped) })
	defer unhook()

	opts := sweep.RunOptions{
		Engine:   engine.Options{Drivers: drivers, Commands: run.New(), Concurrency: a.cfg.GetInt("concurrency"), Config: a.config(), WorkDir: f.WorkDir},
		Settings: base, Load: a.loadOptions(), History: history, OnCell: a.cellLine,
	}
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
		return &exitError{code: exitFailed, msg: fmt.Sprintf("%d cell(s) were not started: the budget could not cover them (flow sweep --resume %s --budget-cost … runs them)", r.Cells.Skipped, s.ID())}
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

func (a *app) printForecast(plan *flows.Plan, as []sweep.Assignment, cells int, base flows.Settings) error {
	history, err := a.history(plan.Root.Name)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "%d assignment(s), %d cell(s) (one run each)\n", len(as), cells)
	return a.printForecastWith(plan, as, cells, base, history)
}

// printForecastWith prints, before anything runs, the worst-case turns and
// the forecast of tokens and cost for cells runs spread evenly over the
// assignments; what no earlier run recorded stays unknown.
func (a *app) printForecastWith(plan *flows.Plan, as []sweep.Assignment, cells int, base flows.Settings, h *sweep.History) error {
	fcs := sweep.Forecasts(plan, as, base, h)
	per := cells / max(len(as), 1)
	turns := 0
	var tokens, cost sweep.Range
	tokens.Known, cost.Known = true, true
	var missing []string
	for _, x := range as {
		fc := fcs[x.Label]
		turns += fc.Turns * per
		for _, p := range []struct {
			into *sweep.Range
			r    sweep.Range
		}{{&tokens, fc.Tokens}, {&cost, fc.Cost}} {
			p.into.Known = p.into.Known && p.r.Known
			p.into.Low += p.r.Low * float64(per)
			p.into.Expected += p.r.Expected * float64(per)
			p.into.High += p.r.High * float64(per)
		}
		for _, m := range fc.Missing {
			if !slices.Contains(missing, m) {
				missing = append(missing, m)
			}
		}
	}
	fmt.Fprintf(a.stderr, "to run: %d cell(s), worst case %d agent turn(s) in all\n", cells, turns)
	tok, usd := "unknown", "unknown"
	if tokens.Known {
		tok = fmt.Sprintf("%.0f–%.0f (expected %.0f)", tokens.Low, tokens.High, tokens.Expected)
	}
	if cost.Known {
		usd = fmt.Sprintf("$%.4f–$%.4f (expected $%.4f)", cost.Low, cost.High, cost.Expected)
	}
	if h.Runs() == 0 {
		fmt.Fprintf(a.stderr, "forecast: tokens and cost unknown: no earlier run of %s recorded usage\n", plan.Root.Name)
		return nil
	}
	fmt.Fprintf(a.stderr, "forecast from %d earlier run(s): tokens %s, cost %s\n", h.Runs(), tok, usd)
	if len(missing) > 0 {
		fmt.Fprintf(a.stderr, "  unknown: no earlier run reported usage for %s\n", strings.Join(missing, ", "))
	}
	return nil
}

func gridText(f *sweep.File) string {
	parts := []string{fmt.Sprintf("%d assignment(s)", len(f.Assignments))}
	if n := len(f.ParamSets); n > 1 {
		parts = append(parts, fmt.Sprintf("%d parameter set(s)", n))
	}
	parts = append(parts, fmt.Sprintf("%d task(s)", len(f.Spec.Tasks)), fmt.Sprintf("repeat %d", max(f.Spec.Repeat, 1)))
	s := strings.Join(parts, " × ") + fmt.Sprintf(" = %d cell(s), %d at a time", len(f.Cells), f.Concurrency)
	if f.Budget.Cost > 0 {
		s += fmt.Sprintf(", budget $%.4f", f.Budget.Cost)
	}
	if f.Budget.Tokens > 0 {
		s += fmt.Sprintf(", budget %d tokens", f.Budget.Tokens)
	}
	return s
}

// cellLine prints one line per cell that starts or ends.
func (a *app) cellLine(ev sweep.CellEvent) {
	c := ev.Cell
	name := fmt.Sprintf("cell %d/%d %s", c.Index, ev.Of, c.Assignment)
	if c.Params != "" {
		name += " [" + c.Params + "]"
	}
	name += fmt.Sprintf(" %s #%d", c.Task, c.Repeat)
	switch {
	case ev.Started:
		fmt.Fprintf(a.stderr, "%s: started (run %s)\n", name, c.Run)
	case c.Status == sweep.StatusSkipped:
		fmt.Fprintf(a.stderr, "%s: not started: %s\n", name, c.Note)
	case c.Outcome != nil:
		o := c.Outcome
		what := string(c.Status)
		if o.Failure != "" {
			what += " (" + o.Failure + ")"
		}
		fmt.Fprintf(a.stderr, "%s: %s in %s, tokens %s, cost %s\n", name, what, fmtMS(o.WallMS), rundir.TokensText(o.Usage), rundir.CostText(o.Usage))
	default:
		fmt.Fprintf(a.stderr, "%s: %s\n", name, c.Status)
	}
}

func countsText(c sweep.Counts) string {
	return fmt.Sprintf("%d of %d cell(s) ended: %d succeeded, %d failed; %d stopped, %d skipped, %d not run",
		c.Succeeded+c.Failed, c.Total, c.Succeeded, c.Failed, c.Stopped, c.Skipped, c.NotRun)
}

// printSummary prints the per-assignment table on stdout.
func (a *app) printSummary(r *sweep.Report) {
	for _, row := range r.Assignments {
		rate := "–"
		if row.SuccessRate != nil {
			rate = fmt.Sprintf("%.0f%% [%.0f%%, %.0f%%]", *row.SuccessRate*100, *row.WilsonLow*100, *row.WilsonHigh*100)
		}
		cost := "not reported"
		switch {
		case row.N == 0:
			cost = "–"
		case row.Cost != nil:
			cost = fmt.Sprintf("$%.4f", *row.Cost)
		}
		mark := ""
		if row.Frontier {
			mark += " frontier"
		}
		if row.Pinned {
			mark += " chosen"
		}
		fmt.Fprintf(a.stdout, "%-30s %d/%d  %-18s cost %s%s\n", row.Assignment, row.Successes, row.N, rate, cost, mark)
	}
	if r.Pin != nil {
		fmt.Fprintf(a.stdout, "chosen: %s — %s\n", r.Pin.Assignment, r.Pin.Reason)
	}
}

func (a *app) pin(s *sweep.Sweep) error {
	choice, line, err := s.Pin(a.loadOptions())
	if err != nil {
		return &exitError{code: exitFailed, msg: "flow pin: " + err.Error()}
	}
	fmt.Fprintf(a.stderr, "pinned %s (%s) into %s: %s\n", choice.Assignment, choice.Reason, s.Snapshot().FlowFile, line)
	return nil
}

// sweepSpec makes the grid from the command line, and from the flow's
// sweep: for what the command line does not give.
func (a *app) sweepSpec(cmd *cobra.Command, plan *flows.Plan, f sweepFlags) (sweep.Spec, error) {
	var spec sweep.Spec
	declared := plan.Root.Sweep
	if declared == nil {
		declared = &flows.Sweep{}
	}
	spec.Models = declared.Models
	if len(f.models) > 0 {
		spec.Models = f.models
	}
	spec.Assign = declared.Assign
	if len(f.assign) > 0 {
		spec.Assign = nil
		for _, as := range f.assign {
			agent, list, ok := strings.Cut(as, "=")
			models := splitList(list)
			if !ok || agent == "" || len(models) == 0 {
				return spec, fmt.Errorf("--assign %q: write AGENT=m1,m2", as)
			}
			if plan.Agents[agent] == nil {
				return spec, fmt.Errorf("--assign %q: the flow runs no agent %q (it runs %s)", as, agent, strings.Join(agentNames(plan), ", "))
			}
			spec.Assign = append(spec.Assign, flows.Assign{Agent: agent, Models: models})
		}
	}
	if len(f.models) == 0 && len(f.assign) == 0 {
		spec.Baseline = declared.Baseline
	}
	if f.baseline != "" {
		spec.Baseline = f.baseline
	}
	tasks, err := sweepTasks(plan, f, declared)
	if err != nil {
		return spec, err
	}
	spec.Tasks = tasks
	spec.Params = declared.Params
	if len(f.params) > 0 {
		if in := plan.Root.Input; in == nil || in.Kind != schema.TObject {
			return spec, fmt.Errorf("--param sweeps fields of the input, and flow %s takes no object input", plan.Root.Name)
		}
		spec.Params = nil
		for _, p := range f.params {
			key, list, ok := strings.Cut(p, "=")
			if !ok || key == "" || list == "" {
				return spec, fmt.Errorf("--param %q: write key=v1,v2", p)
			}
			var values []any
			for _, v := range splitList(list) {
				values = append(values, fieldValue(plan.Root.Input, key, v))
			}
			spec.Params = append(spec.Params, flows.Param{Key: key, Values: values})
		}
	}
	spec.Repeat = max(declared.Repeat, 1)
	if cmd.Flags().Changed("repeat") {
		if f.repeat < 1 {
			return spec, errors.New("--repeat must be at least 1")
		}
		spec.Repeat = f.repeat
	}
	return spec, nil
}

// sweepTasks reads the tasks: --inputs, else one --input/-i, else the
// flow's sweep.inputs, else one task with no input.
func sweepTasks(plan *flows.Plan, f sweepFlags, declared *flows.Sweep) ([]sweep.Task, error) {
	keepID := plan.Root.Input != nil && plan.Root.Input.Field("id") != nil
	oneInput := f.input != "" || f.inputFile != "" || len(f.inputKV) > 0
	switch {
	case f.inputs != "" && oneInput:
		return nil, errors.New("give --inputs or one --input, not both")
	case f.inputs != "":
		return sweep.ReadTasks(f.inputs, keepID)
	case oneInput:
		in, err := parseInput(plan.Root, f.runFlags)
		if err != nil {
			return nil, err
		}
		return []sweep.Task{{ID: "t1", Input: in}}, nil
	case declared.Inputs != "":
		return sweep.ReadTasks(declared.Inputs, keepID)
	case declared.HasTasks:
		return sweep.TasksOf(declared.Tasks, keepID)
	}
	return []sweep.Task{{ID: "t1"}}, nil
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

func agentNames(plan *flows.Plan) []string {
	var out []string
	for name := range plan.Agents {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
