package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/reuse"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/runner"
	"github.com/flowrun/flow/sweep"
	"github.com/flowrun/flow/sweep/gate"
)

// exitInconclusive is flow gate's exit status when a task is
// INCONCLUSIVE and none failed (docs/gate.md).
const exitInconclusive = 3

type gateFlags struct {
	inputs       string
	minSuccess   float64
	baseline     string
	assignment   string
	margin       float64
	alpha        float64
	maxTrials    int
	junit        string
	summary      string
	json         bool
	reuse        bool
	cassettes    []string
	model        string
	concurrency  int
	budgetCost   float64
	budgetTokens int64
	timeout      time.Duration
}

func (a *app) gateCmd() *cobra.Command {
	var f gateFlags
	cmd := &cobra.Command{
		Use:   "gate FILE --inputs TASKS (--min-success P | --baseline SWEEP)",
		Short: "A statistical gate for CI: PASS, FAIL or INCONCLUSIVE per task, trials spent where the verdict is open",
		Long: "Run the flow on each task again and again, in rounds, until a sequential test\n" +
			"decides it: --min-success P passes a task whose success rate is shown to reach P\n" +
			"and fails one shown to lie --margin below it; --baseline SWEEP compares it with a\n" +
			"sweep's assignment instead (--reuse takes the sweep's recorded runs as the\n" +
			"baseline's samples; without it the baseline runs beside the candidate). A task\n" +
			"still open at --max-trials is INCONCLUSIVE. Each wrong verdict is at most --alpha\n" +
			"likely at the rates tested. Trials are the cells of a sweep (.flow/sweeps/<id>/);\n" +
			"--budget-cost and --budget-tokens bound them; rate limits and infrastructure\n" +
			"failures are run again, never counted. --cassette answers every turn from a\n" +
			"recording, offline: a dry run of the CI wiring. Exit 0 all PASS, 1 a FAIL,\n" +
			"3 an INCONCLUSIVE and no FAIL, 2 a bad command line. See docs/gate.md.",
		Example: `  flow gate examples/solve.yaml --min-success 0.8 --junit gate.xml
  flow gate examples/solve.yaml --baseline .flow/sweeps --reuse --json
  flow gate examples/solve.yaml --cassette examples/solve.cassette --min-success 0.8`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.gate(cmd, args[0], f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.inputs, "inputs", "", "a JSON Lines file of tasks, as flow sweep reads (default the flow's sweep.inputs)")
	fl.Float64Var(&f.minSuccess, "min-success", 0, "the success rate each task must show, in (0, 1]")
	fl.StringVar(&f.baseline, "baseline", "", "compare with this sweep (an id, its directory, or a directory of sweeps: the newest)")
	fl.StringVar(&f.assignment, "baseline-assignment", "", "the baseline sweep's assignment (default the one it chooses, as flow pin)")
	fl.Float64Var(&f.margin, "margin", 0.2, "how far below the bar a rate must be shown to fail")
	fl.Float64Var(&f.alpha, "alpha", 0.05, "the bound on each wrong verdict")
	fl.IntVar(&f.maxTrials, "max-trials", 20, "trials of one task at most")
	fl.StringVar(&f.junit, "junit", "", "write a JUnit XML report here: one testcase per task")
	fl.StringVar(&f.summary, "summary", "", "write a Markdown summary here (default $GITHUB_STEP_SUMMARY when set)")
	fl.BoolVar(&f.json, "json", false, "write the verdicts as JSON on standard output")
	fl.BoolVar(&f.reuse, "reuse", false, "take the baseline sweep's recorded runs as the baseline's samples")
	fl.StringArrayVar(&f.cassettes, "cassette", nil, "answer every turn from this recording, offline: a cassette, a run or a sweep (repeatable)")
	fl.StringVar(&f.model, "model", "", "run every agent on this model")
	fl.IntVar(&f.concurrency, "concurrency", 1, "trials run at once")
	fl.Float64Var(&f.budgetCost, "budget-cost", 0, "the most USD the gate's runs may spend")
	fl.Int64Var(&f.budgetTokens, "budget-tokens", 0, "the most tokens the gate's runs may spend")
	fl.DurationVar(&f.timeout, "timeout", 0, "bound on each agent turn (e.g. 90s, 10m)")
	return cmd
}

func (a *app) gate(cmd *cobra.Command, file string, f gateFlags) error {
	rule := gate.Rule{MinSuccess: f.minSuccess, Margin: f.margin, Alpha: f.alpha, MaxTrials: f.maxTrials}
	switch {
	case cmd.Flags().Changed("min-success") && f.baseline != "":
		return invalid("give --min-success P or --baseline SWEEP, not both")
	case !cmd.Flags().Changed("min-success") && f.baseline == "":
		return invalid("flow gate needs --min-success P (a success rate, e.g. 0.8) or --baseline SWEEP")
	case f.reuse && f.baseline == "":
		return invalid("--reuse takes the baseline's recorded runs: give --baseline SWEEP")
	case f.assignment != "" && f.baseline == "":
		return invalid("--baseline-assignment names an assignment of the --baseline sweep: give --baseline SWEEP")
	case f.concurrency < 1:
		return invalid("--concurrency %d: give at least 1", f.concurrency)
	}
	if err := rule.Check(f.baseline != ""); err != nil {
		return invalid("%v", err)
	}
	plan, err := a.load(file)
	if err != nil {
		return err
	}
	tasks, err := a.gateTasks(plan, f)
	if err != nil {
		return invalid("%v", err)
	}
	spec := sweep.Spec{Tasks: tasks, Repeat: 1}
	if f.model != "" {
		spec.Models = []string{f.model}
	}
	budget := sweep.Budget{Tokens: f.budgetTokens, Cost: f.budgetCost}
	cfg := sweep.Config{Spec: spec, Concurrency: f.concurrency, Timeout: f.timeout}
	if err := sweep.Check(plan, cfg); err != nil {
		return invalid("%v", err)
	}
	if len(f.cassettes) == 0 {
		if _, err := a.preflight(cmd.Context(), plan); err != nil {
			return err
		}
	}
	base, err := a.gateBaseline(plan, f, tasks, cfg)
	if err != nil {
		return err
	}
	if base != nil && base.Fresh != nil {
		defer func() { _ = base.Fresh.Sweep.Unlock() }()
	}
	opts, leaves, err := a.gateRunOptions(f)
	if err != nil {
		return err
	}
	s, err := sweep.Create(a.gatesDir(), plan, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = s.Unlock() }()
	g := &gate.Gate{Candidate: gate.Runs{Sweep: s, Plan: plan}, Rule: rule, Budget: budget,
		OnDecided: func(t gate.Task) { fmt.Fprintln(a.stderr, safeLine(t.Line())) }}
	if g.Candidate.Opts, err = a.gateSide(s, plan, opts); err != nil {
		return err
	}
	if base != nil {
		g.Baseline = base
		if fresh := base.Fresh; fresh != nil {
			if fresh.Opts, err = a.gateSide(fresh.Sweep, fresh.Plan, opts); err != nil {
				return err
			}
		}
	}
	if leaves != nil {
		g.Halt = func() string {
			if len(leaves.Misses()) > 0 {
				return "the recording does not answer every turn: this is no dry run of the gate"
			}
			return ""
		}
	}
	a.gateHeader(s, plan, rule, base)

	sigCtx, sigStop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer sigStop()
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	unhook := context.AfterFunc(sigCtx, func() { opts.Backend.Stop(cancel, runner.StopRun) })
	defer unhook()
	res, runErr := g.Run(ctx)
	missed := 0
	if leaves != nil {
		seen := map[string]bool{}
		for _, m := range leaves.Misses() {
			if line := fmt.Sprintf("flow gate: %s does not match the recording: %s", m.Visit, m.Reason); !seen[line] {
				seen[line] = true
				fmt.Fprintln(a.stderr, safeLine(line))
			}
		}
		missed = len(seen)
	}
	rep := gate.NewReport(plan.Root.Name, s.Dir(), rule, base, res)
	if err := a.gateOutputs(rep, f); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if res.Note != "" {
		fmt.Fprintln(a.stderr, safeLine(res.Note))
	}
	fmt.Fprintf(a.stderr, "gate %s: %s (trials: %s)\n", s.ID(), verdictCounts(res), s.CellsDir())
	switch {
	case res.Ended == "interrupted":
		return &exitError{code: exitInterrupted}
	case missed > 0:
		return &exitError{code: exitFailed, msg: "flow gate: a turn missed the recording (as flow test would fail)"}
	case rep.Exit == 1:
		return &exitError{code: exitFailed}
	case rep.Exit == exitInconclusive:
		return &exitError{code: exitInconclusive}
	}
	return nil
}

// gatesDir holds the gates' trials, each gate's a sweep directory: not
// among the sweeps, so that a directory of sweeps given as --baseline
// holds no gate's.
func (a *app) gatesDir() string { return a.cfg.GetString("gates_dir") }

// gateTasks are the tasks a gate runs: --inputs, else one per cassette
// (its recorded input), else the flow's sweep.inputs, else one task with
// no input.
func (a *app) gateTasks(plan *flows.Plan, f gateFlags) ([]sweep.Task, error) {
	if f.inputs != "" {
		return sweep.ReadTasks(f.inputs, sweep.KeepsID(plan))
	}
	if len(f.cassettes) > 0 && !a.anySweep(f.cassettes) {
		var tasks []sweep.Task
		for _, c := range f.cassettes {
			dir := a.recording(c)
			in, err := reuse.CassetteInput(dir)
			if err != nil {
				return nil, err
			}
			tasks = append(tasks, sweep.Task{ID: strings.TrimSuffix(filepath.Base(dir), ".cassette"), Input: in})
		}
		return sweep.TasksOf(taskValues(tasks), true)
	}
	spec, err := sweep.SpecFor(plan, sweep.Overrides{})
	return spec.Tasks, err
}

func taskValues(tasks []sweep.Task) []any {
	out := make([]any, len(tasks))
	for i, t := range tasks {
		out[i] = map[string]any{"id": t.ID, "input": t.Input}
	}
	return out
}

// recording finds a recording named on the command line: a cassette or
// run directory, or a run id under runs_dir.
func (a *app) recording(name string) string {
	if dir, ok := rundir.Find(a.cfg.GetString("runs_dir"), name); ok {
		return dir
	}
	return name
}
