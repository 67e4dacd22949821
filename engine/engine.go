package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/flowrun/flow/flows"
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
}

// Asker asks the person running the flow a question.
type Asker interface {
	Ask(ctx context.Context, visit, question string, options []string, def string) (string, error)
}

// Result is how a run ended.
type Result struct {
	RunID   string
	Dir     string
	OK      bool
	Output  any
	Failure *Failure // nil when OK
	Usage   Usage
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
	input, err := checkInput(plan.Root, opts.Input, true)
	if err != nil {
		return nil, err
	}
	if err := opts.check(plan); err != nil {
		return nil, err
	}
	if opts.RunsDir == "" {
		opts.RunsDir = filepath.Join(opts.WorkDir, ".flow", "runs")
	}
	w, err := rundir.Create(opts.RunsDir, opts.RunID)
	if err != nil {
		return nil, err
	}
	opts.RunID = w.ID()
	snap := rundir.NewSnapshot(opts.RunID, plan, input, opts.snapshotSettings())
	if err := w.WriteSnapshot(snap); err != nil {
		_ = w.Close()
		return nil, err
	}
	return run(ctx, plan, opts, w, input, nil)
}

// check fills in defaults and refuses a run that could not go through.
func (o *Options) check(plan *flows.Plan) error {
	if o.Asker == nil {
		if n := askWithoutDefault(plan); n != nil {
			return &RefusedError{Msg: fmt.Sprintf("%s: ask %q has no default and nobody is at the terminal to answer it; add default: or run it in a terminal", n.Pos, n.ID)}
		}
	}
	if err := checkDrivers(plan, *o); err != nil {
		return err
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

func (o *Options) snapshotSettings() rundir.Settings {
	s := rundir.Settings{Model: o.Settings.Model, Concurrency: o.Concurrency, WorkDir: o.WorkDir, Config: o.Config}
	if o.Settings.Timeout > 0 {
		s.Timeout = o.Settings.Timeout.String()
	}
	if o.Settings.TurnTimeout > 0 {
		s.TurnTimeout = o.Settings.TurnTimeout.String()
	}
	return s
}

// run walks the plan with w open, and closes w. earlier holds the facts of
// earlier attempts when the run resumes; notes are said as it starts.
func run(ctx context.Context, plan *flows.Plan, opts Options, w *rundir.Writer, input any, earlier []*Fact, notes ...string) (res *Result, err error) {
	r := &runner{plan: plan, opts: opts, dir: w, live: make(chan struct{}, opts.Concurrency),
		sessions: map[rundir.Scope]*session{}, minTurn: map[string]int64{}}
	defer func() {
		// A run ends every process it started, daemons a step left included.
		endLeftovers(r.opts.RunID)
		if cerr := w.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("closing run directory: %w", cerr)
		}
	}()
	r.replay(earlier)
	start := time.Now()
	if err := w.Fact(&Fact{Type: rundir.FactRun, Time: start, RunID: opts.RunID, Flow: plan.Root.Name, Status: rundir.StatusRunning, Input: input, Resumed: earlier != nil}); err != nil {
		return nil, err
	}
	r.emit(&Event{Type: rundir.EventRunStart, Dir: filepath.Join(opts.RunsDir, opts.RunID)})
	for _, n := range notes {
		r.emit(&Event{Type: rundir.EventNote, Message: n})
	}
	fr := (&frame{calls: &flows.Calls{Flow: plan.Root}, scopes: map[string]string{"flow": "_flow"}}).withBudget(plan.Root.Budget, "flow "+plan.Root.Name)
	out, fail := r.sequence(ctx, fr, plan.Root.Nodes, map[string]any{"input": input}, "")
	shown := filepath.Join(opts.RunsDir, opts.RunID) // as the user named it
	res = &Result{RunID: opts.RunID, Dir: shown, OK: fail == nil, Output: out, Failure: fail, Usage: r.total()}
	wall := time.Since(start).Milliseconds()
	// The run's output is made of its visits' outputs, which the journal
	// has: it goes to output.json, not into the journal a second time.
	endErr := w.Fact(&Fact{Type: rundir.FactRun, Time: time.Now(), RunID: opts.RunID, Status: res.Status(), OK: &res.OK, Error: res.Failure, WallMS: wall})
	r.emit(&Event{Type: rundir.EventRunEnd, Status: res.Status(), OK: &res.OK, Error: res.Failure, Usage: &res.Usage, WallMS: wall, Dir: shown})
	return res, errors.Join(endErr, w.Finish(out))
}

// runner is one run in progress. Its maps are guarded by mu; everything else
// is set before the run starts and read-only after.
type runner struct {
	plan *flows.Plan
	opts Options
	dir  *rundir.Writer
	live chan struct{} // the run-wide cap on live agent turns

	mu       sync.Mutex
	sessions map[rundir.Scope]*session
	ended    map[string]*Fact // visits that ended in an earlier attempt (resume)
	minTurn  map[string]int64 // the smallest turn (tokens) of each agent so far
	usage    Usage            // what every visit spent, earlier attempts' included
}

// emit writes an event and hands it to OnEvent.
func (r *runner) emit(e *Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
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

// checkInput checks a flow's input against its declared type and fills in
// defaults. A run's input (closed) may hold no key the type does not
// declare, so a typo'd key is an error rather than a run on the defaults;
// a called flow's input may hold more, as a caller passes on what it has.
func checkInput(f *flows.Flow, in any, closed bool) (any, error) {
	if f.Input == nil || f.Input.Kind == schema.TString {
		switch v := in.(type) {
		case nil:
			return "", nil
		case string:
			return v, nil
		}
		return nil, &InputError{Msg: fmt.Sprintf("flow %s takes a string input, got %T", f.Name, in)}
	}
	if closed {
		if err := f.Input.Unknown(in); err != nil {
			return nil, &InputError{Msg: fmt.Sprintf("input of flow %s: %v", f.Name, err)}
		}
	}
	v := f.Input.WithDefaults(in)
	if err := f.Input.Check(v); err != nil {
		return nil, &InputError{Msg: fmt.Sprintf("input of flow %s: %v (declared %s)", f.Name, err, f.Input)}
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
