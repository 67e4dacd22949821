package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
)

// Options configure one run. The zero value of each field has a documented
// default; Drivers and Commands must be given for flows that use them.
type Options struct {
	Drivers  map[string]Driver // by driver name: pi, claude, codex, openai, exec
	Commands Commander         // runs `run:` nodes
	// RunsDir holds run directories; default .flow/runs under WorkDir.
	RunsDir string
	WorkDir string // default: the current directory
	RunID   string // default: a fresh one (rundir.NewRunID)
	Input   any    // the run's input, before defaults
	// Settings are the run-wide overrides of model and timeout (SPEC 3.6),
	// resolved by flows.Settings as `flow plan` resolves them.
	Settings flows.Settings
	// Concurrency caps the agent turns alive at once in the run; default
	// the flow's concurrency, else 8.
	Concurrency int
	// Live, when set, is the cap on live agent turns shared with other
	// runs (a sweep's cells, from the Runtime's NewSemaphore), and
	// Concurrency is then ignored.
	Live Semaphore
	// Asker answers `ask` nodes; nil means nobody is at the terminal, so an
	// ask takes its default and a flow with an ask without one is refused.
	Asker Asker
	// OnEvent receives every event as it happens (the live view). It is
	// called from many goroutines and must not block for long.
	OnEvent func(*Event)
	// Config is the resolved configuration, recorded in the snapshot
	// (without secrets).
	Config map[string]any
	// Backoff is the first retry delay (doubling, capped at 30 s); default 1 s.
	Backoff time.Duration
	// Secrets are values never to be written into the run directory nor
	// handed to OnEvent (keys from the configuration). The values of the
	// variables the plan's agents name as api_key_env, and of every
	// environment variable whose name says it holds a secret, are added
	// by the engine and the run directory themselves.
	Secrets []string
	// Leaves runs agent turns and commands; default LocalLeaves of Drivers
	// and Commands. A remote LeafRunner (package temporal) replaces both.
	Leaves LeafRunner
	// Runtime is where the walk happens; default LocalRuntime.
	Runtime Runtime
	// Repeat is a sweep cell's repeat (from 1): part of every visit key,
	// since repeats are distinct samples (docs/reuse-and-tests.md).
	Repeat int

	// repos are the commits the run started at, by repository (the
	// snapshot's Repos): where isolated scopes begin.
	repos map[string]string
}

// Result is how a run ended.
type Result struct {
	RunID   string
	Dir     string
	OK      bool
	Output  any
	Failure *Failure // nil when OK
	Usage   Usage
	// Overspend names each budget the run ended above, by how much and
	// why; the run's end fact records the same.
	Overspend []rundir.Overspend
}

// Status is the run's status: succeeded, failed or stopped.
func (r *Result) Status() rundir.Status {
	switch {
	case r.OK:
		return rundir.StatusSucceeded
	case r.Failure != nil && r.Failure.Root().Kind == schema.FailStopped:
		return rundir.StatusStopped
	}
	return rundir.StatusFailed
}

// Execute runs plan to its end and returns how it ended. An error means
// the run could not start (bad input, refused, the run directory); a run that
// started and failed returns a Result with OK false. Cancelling ctx with
// cause ErrStopped ends running visits as `stopped`. When Execute returns,
// every process the run started has ended, daemons a step left included.
func Execute(ctx context.Context, plan *flows.Plan, opts Options) (*Result, error) {
	w, snap, err := begin(ctx, plan, &opts)
	if err != nil {
		return nil, err
	}
	return runLocal(ctx, plan, opts, w, snap.Input, nil)
}

// Begin does what Execute does before it walks: it checks the input,
// refuses a run that could not go through, creates the run directory
// (taking its lock) and writes the snapshot. It is for a caller that has
// the run walked elsewhere (package temporal) and records it here; the
// caller closes the Writer.
func Begin(ctx context.Context, plan *flows.Plan, opts Options) (*rundir.Writer, *rundir.Snapshot, error) {
	return begin(ctx, plan, &opts)
}

// Snapshot is the snapshot Execute would record for a run of plan, with
// opts.RunID as its run (which may be ""), the input checked and the
// settings resolved, without creating a run directory: for runs that
// something else starts later (a Temporal Schedule).
func Snapshot(plan *flows.Plan, opts Options) (*rundir.Snapshot, error) {
	input, err := checkInput(plan.Root, opts.Input, true)
	if err != nil {
		return nil, err
	}
	if err := opts.check(plan); err != nil {
		return nil, err
	}
	return rundir.NewSnapshot(opts.RunID, plan, input, opts.snapshotSettings()), nil
}

func begin(ctx context.Context, plan *flows.Plan, opts *Options) (*rundir.Writer, *rundir.Snapshot, error) {
	input, err := checkInput(plan.Root, opts.Input, true)
	if err != nil {
		return nil, nil, err
	}
	if err := opts.check(plan); err != nil {
		return nil, nil, err
	}
	if opts.RunsDir == "" {
		opts.RunsDir = filepath.Join(opts.WorkDir, ".flow", "runs")
	}
	w, err := rundir.Create(opts.RunsDir, opts.RunID, opts.secrets(plan)...)
	if err != nil {
		return nil, nil, err
	}
	opts.RunID = w.ID()
	snap := rundir.NewSnapshot(opts.RunID, plan, input, opts.snapshotSettings())
	snap.Repos = startCommits(ctx, plan, opts.WorkDir)
	opts.repos = snap.Repos
	if err := w.WriteSnapshot(snap); err != nil {
		_ = w.Close()
		return nil, nil, err
	}
	return w, snap, nil
}

// Walk runs plan with its facts and events going to rec, for a runtime
// other than Execute's (a Temporal workflow walks the plan it rebuilt
// from the run's snapshot). opts.RunID names the run; earlier holds the
// facts of earlier attempts when the run resumes, as for Resume. Walk
// neither creates a run directory nor ends processes: rec and
// opts.Leaves own where facts and processes live. Isolated scopes
// (working copies) need a run directory in this process: a plan with
// them is refused unless rec is one.
func Walk(ctx context.Context, plan *flows.Plan, opts Options, rec Recorder, earlier []*Fact) (*Result, error) {
	input, err := checkInput(plan.Root, opts.Input, true)
	if err != nil {
		return nil, err
	}
	if err := opts.check(plan); err != nil {
		return nil, err
	}
	if _, local := rec.(*rundir.Writer); !local {
		if n := isolatedNode(plan); n != nil {
			return nil, &RefusedError{Msg: fmt.Sprintf("%s: isolation: worktree needs the run's working copy on this machine; run it with flow run, not on remote workers", n.Pos)}
		}
	}
	return walk(ctx, plan, opts, rec, input, earlier)
}

// isolatedNode is a node of p with isolation, or nil.
func isolatedNode(p *flows.Plan) *flows.Node {
	var found *flows.Node
	for _, f := range p.Flows {
		flows.Walk(f.Nodes, func(n *flows.Node) {
			if found == nil && n.Isolation {
				found = n
			}
		})
	}
	return found
}

// check fills in defaults and refuses a run that could not go through.
func (o *Options) check(plan *flows.Plan) error {
	if o.Asker == nil {
		if n := askWithoutDefault(plan); n != nil {
			return &RefusedError{Msg: fmt.Sprintf("%s: ask %q has no default and nobody is at the terminal to answer it; add default: or run it in a terminal", n.Pos, n.ID)}
		}
	}
	if o.Leaves == nil {
		if err := checkDrivers(plan, *o); err != nil {
			return err
		}
		o.Leaves = LocalLeaves{Drivers: o.Drivers, Commands: o.Commands}
	}
	if o.Runtime == nil {
		o.Runtime = LocalRuntime{}
	}
	if o.WorkDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return fmt.Errorf("finding the working directory: %w", err)
		}
		o.WorkDir = wd
	}
	if o.Concurrency <= 0 {
		o.Concurrency = plan.Root.Concurrency
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	return nil
}

// secrets are the values the run directory must redact besides those of
// the environment variables named like secrets: the caller's and the
// values of the variables the agents take their keys from.
func (o *Options) secrets(plan *flows.Plan) []string {
	out := slices.Clone(o.Secrets)
	for _, a := range plan.Agents {
		if a.APIKeyEnv != "" {
			out = append(out, os.Getenv(a.APIKeyEnv))
		}
	}
	return out
}

func (o *Options) snapshotSettings() rundir.Settings {
	s := rundir.Settings{Model: o.Settings.Model, Models: o.Settings.Models, Concurrency: o.Concurrency, WorkDir: o.WorkDir, Config: o.Config}
	if o.Settings.Timeout > 0 {
		s.Timeout = o.Settings.Timeout.String()
	}
	if o.Settings.TurnTimeout > 0 {
		s.TurnTimeout = o.Settings.TurnTimeout.String()
	}
	return s
}

// runLocal walks the plan with w open, closes w, and ends every process
// the run left. earlier holds the facts of earlier attempts when the run
// resumes; notes are said as it starts.
func runLocal(ctx context.Context, plan *flows.Plan, opts Options, w *rundir.Writer, input any, earlier []*Fact, notes ...string) (res *Result, err error) {
	defer func() {
		// A run ends every process it started, daemons a step left included.
		endLeftovers(opts.RunID)
		if cerr := w.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("closing run directory: %w", cerr)
		}
	}()
	return walk(ctx, plan, opts, w, input, earlier, notes...)
}

// walk runs the plan, each fact and event into rec, and its output into
// rec's Finish.
func walk(ctx context.Context, plan *flows.Plan, opts Options, rec Recorder, input any, earlier []*Fact, notes ...string) (*Result, error) {
	r := &runner{plan: plan, opts: opts, dir: rec, rt: opts.Runtime, leaves: opts.Leaves, live: opts.Live,
		sessions: map[rundir.Scope]*session{}, ledger: newLedger(opts.Runtime), wt: newWorktrees(opts.repos)}
	r.local, _ = rec.(*rundir.Writer)
	if r.live == nil {
		r.live = opts.Runtime.NewSemaphore(opts.Concurrency)
	}
	notes = append(notes, r.replay(earlier)...)
	start := r.rt.Now()
	if err := rec.Fact(&Fact{Type: rundir.FactRun, Time: start, RunID: opts.RunID, Flow: plan.Root.Name, Status: rundir.StatusRunning, Input: input, Resumed: earlier != nil}); err != nil {
		return nil, err
	}
	r.emit(&Event{Type: rundir.EventRunStart, Dir: filepath.Join(opts.RunsDir, opts.RunID)})
	for _, n := range notes {
		r.emit(&Event{Type: rundir.EventNote, Message: n})
	}
	fr := (&frame{calls: &flows.Calls{Flow: plan.Root}, scopes: map[string]string{"flow": "_flow"}}).withBudget(plan.Root.Budget, "flow "+plan.Root.Name)
	values := map[string]any{"input": input} // the root sequence adds each node's value by id
	out, fail := r.sequence(ctx, fr, plan.Root.Nodes, values, "")
	r.closeOwned(ctx, "_flow")
	shown := filepath.Join(opts.RunsDir, opts.RunID) // as the user named it
	// What the caller prints is as redacted as what the run directory
	// holds.
	res := &Result{RunID: opts.RunID, Dir: shown, OK: fail == nil, Output: secret.Value(r.secrets(), out),
		Failure: redactFailure(r.secrets(), fail), Usage: r.total(), Overspend: r.ledger.overspends()}
	end := r.rt.Now()
	wall := end.Sub(start).Milliseconds()
	// The run's output is made of its visits' outputs, which the journal
	// has: it goes to output.json, not into the journal a second time.
	endErr := rec.Fact(&Fact{Type: rundir.FactRun, Time: end, RunID: opts.RunID, Status: res.Status(), OK: &res.OK, Error: res.Failure, WallMS: wall, Overspend: res.Overspend})
	r.emit(&Event{Type: rundir.EventRunEnd, Status: res.Status(), OK: &res.OK, Error: res.Failure, Usage: &res.Usage, WallMS: wall, Dir: shown, Overspend: res.Overspend})
	var valuesErr error
	if vr, ok := rec.(ValuesRecorder); ok {
		valuesErr = vr.WriteValues(values)
	}
	return res, errors.Join(endErr, valuesErr, rec.Finish(out))
}

// secrets are the run directory's redactor, or nil where the walk records
// elsewhere (a workflow: its leaves redact on their workers).
func (r *runner) secrets() *secret.Redactor {
	if r.local == nil {
		return nil
	}
	return r.local.Secrets()
}

// redactHome redacts what was written into the home of path since start,
// in a run directory of this process.
func (r *runner) redactHome(path string, since time.Time) error {
	if r.local == nil {
		return nil
	}
	return r.local.RedactHome(path, since)
}

// redactFailure returns f with its messages redacted, as a copy when it
// held a secret.
func redactFailure(secrets *secret.Redactor, f *Failure) *Failure {
	if f == nil {
		return nil
	}
	cause := redactFailure(secrets, f.Cause)
	msg := secrets.String(f.Message)
	if msg == f.Message && cause == f.Cause {
		return f
	}
	c := *f
	c.Message, c.Cause = msg, cause
	return &c
}

// runner is one run in progress. Its maps are guarded by mu; everything else
// is set before the run starts and read-only after.
type runner struct {
	plan   *flows.Plan
	opts   Options
	dir    Recorder
	local  *rundir.Writer // dir, when it is a run directory in this process (nil in a workflow)
	rt     Runtime
	leaves LeafRunner
	live   Semaphore // the run-wide cap on live agent turns

	mu       sync.Mutex
	sessions map[rundir.Scope]*session
	ended    map[string]*Fact // visits that ended in an earlier attempt (resume)
	ledger   *ledger          // what turns cost, and the budgets they overspent
	usage    Usage            // what every visit spent, earlier attempts' included

	wt *worktrees // isolated scopes and their repositories (SPEC 11)
}

// emit writes an event and hands it to OnEvent.
func (r *runner) emit(e *Event) {
	if e.Time.IsZero() {
		e.Time = r.rt.Now()
	}
	e.Run = r.opts.RunID
	_ = r.dir.Event(e) // events are for watching; the journal is what counts
	if r.opts.OnEvent != nil {
		r.opts.OnEvent(e)
	}
}

// spent adds a visit's usage to the run's total.
func (r *runner) spent(u *Usage) {
	if u == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.usage.Add(*u)
}

func (r *runner) total() Usage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.usage
}

// CheckInput checks a run's input against the flow's declared input and
// fills in its defaults, as Execute does before anything runs; a sweep
// checks every cell's input so before its first cell starts. A misfit is
// an *InputError.
func CheckInput(f *flows.Flow, in any) (any, error) { return checkInput(f, in, true) }

// checkInput is flows.Flow.CheckInput with the engine's representation of
// numbers (normalize), its fault an *InputError. A run's input (closed)
// may hold no key the type does not declare, so a typo'd key is an error
// rather than a run on the defaults; a called flow's input may hold more,
// as a caller passes on what it has.
func checkInput(f *flows.Flow, in any, closed bool) (any, error) {
	if closed && f.Input != nil && f.Input.Kind != schema.TString {
		if err := f.Input.Unknown(in); err != nil {
			return nil, &InputError{Msg: fmt.Sprintf("input of flow %s: %v", f.Name, err), Err: err}
		}
	}
	v, err := f.CheckInput(in)
	if err != nil {
		return nil, &InputError{Msg: err.Error(), Err: err}
	}
	if f.Input == nil || f.Input.Kind == schema.TString {
		return v, nil
	}
	return normalize(f.Input, v), nil
}

func askWithoutDefault(p *flows.Plan) *flows.Node {
	var found *flows.Node
	for _, f := range p.Flows {
		flows.Walk(f.Nodes, func(n *flows.Node) {
			if found == nil && n.Kind == schema.KindAsk && !n.HasDefault {
				found = n
			}
		})
	}
	return found
}

func checkDrivers(p *flows.Plan, o Options) error {
	for _, f := range p.Flows {
		var err error
		flows.Walk(f.Nodes, func(n *flows.Node) {
			switch {
			case err != nil:
			case n.Kind == schema.KindRun && o.Commands == nil:
				err = &RefusedError{Msg: fmt.Sprintf("%s: no command runner is configured for run nodes", n.Pos)}
			case n.Kind == schema.KindAgent && n.Agent != nil && o.Drivers[n.Agent.Driver] == nil:
				err = &RefusedError{Msg: fmt.Sprintf("%s: agent %q uses driver %q, which this build of flow does not provide", n.Pos, n.Agent.Name, n.Agent.Driver)}
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}
