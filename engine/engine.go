package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/flowrun/flow/flows"
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
	RunID   string // default: NewRunID(now)
	Input   any    // the run's input, before defaults
	Model   string // --model: overrides every agent (SPEC 3.6)
	Timeout time.Duration
	// DefaultTimeout bounds a turn that nothing else bounds (SPEC 3.6's
	// last resort); default 30 minutes. The configuration's `timeout`.
	DefaultTimeout time.Duration
	// Concurrency caps the agent turns alive at once in the run; default
	// the flow's concurrency, else 8.
	Concurrency int
	// Asker answers `ask` nodes; nil means nobody is at the terminal, so an
	// ask takes its default and a flow with an ask without one is refused.
	Asker Asker
	// OnEvent receives every event as it happens (the live view). It is
	// called from many goroutines and must not block for long.
	OnEvent func(*Event)
	// Settings is the resolved configuration, recorded in the snapshot
	// (without secrets).
	Settings map[string]any
	// NoJournal turns the journal off: for measuring its cost only.
	NoJournal bool
	// Resume continues the run RunID in its existing directory.
	Resume *Resume
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

// Status is the run's status word: succeeded, failed or stopped.
func (r *Result) Status() string {
	switch {
	case r.OK:
		return "succeeded"
	case r.Failure != nil && r.Failure.Kind == schema.FailStopped:
		return "stopped"
	}
	return "failed"
}

const defaultTurnTimeout = 30 * time.Minute
const defaultRunTimeout = 10 * time.Minute

// Execute runs plan to its end and returns how it ended. An error means
// the run could not start (bad input, refused, the run directory); a run that
// started and failed returns a Result with OK false. Cancelling ctx with
// cause ErrStopped ends running visits as `stopped`.
func Execute(ctx context.Context, plan *flows.Plan, opts Options) (*Result, error) {
	input, err := checkInput(plan.Root, opts.Input)
	if err != nil {
		return nil, err
	}
	if opts.Asker == nil {
		if n := askWithoutDefault(plan); n != nil {
			return nil, &RefusedError{Msg: fmt.Sprintf("%s: ask %q has no default and nobody is at the terminal to answer it; add default: or run it in a terminal", n.Pos, n.ID)}
		}
	}
	if err := checkDrivers(plan, opts); err != nil {
		return nil, err
	}
	if opts.WorkDir == "" {
		if opts.WorkDir, err = os.Getwd(); err != nil {
			return nil, fmt.Errorf("finding the working directory: %w", err)
		}
	}
	if opts.RunsDir == "" {
		opts.RunsDir = filepath.Join(opts.WorkDir, ".flow", "runs")
	}
	now := time.Now()
	if opts.RunID == "" {
		opts.RunID = NewRunID(now)
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = plan.Root.Concurrency
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	if opts.Backoff <= 0 {
		opts.Backoff = time.Second
	}
	dir := filepath.Join(opts.RunsDir, opts.RunID)
	st, err := openStore(dir, opts.Resume != nil, opts.NoJournal)
	if err != nil {
		return nil, err
	}
	r := &runner{plan: plan, opts: opts, store: st, dir: dir, live: make(chan struct{}, opts.Concurrency),
		sessions: map[string]*session{}, usage: newUsageBook(planSize(plan)), minTurn: map[string]int64{}}
	if opts.Resume != nil {
		r.loadReplay(opts.Resume.Facts)
	}
	res, err := r.run(ctx, input, now)
	if cerr := st.close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing run directory: %w", cerr)
	}
	return res, err
}

// runner is one run in progress. Its maps are guarded by mu; everything else
// is set before the run starts and read-only after.
type runner struct {
	plan  *flows.Plan
	opts  Options
	store *store
	dir   string
	live  chan struct{} // the run-wide cap on live agent turns

	mu       sync.Mutex
	sessions map[string]*session
	usage    *usageBook
	ended    map[string]*Fact // visits that ended in an earlier attempt (resume)
	minTurn  map[string]int64 // the smallest turn (tokens) of each agent so far
}

func (r *runner) run(ctx context.Context, input any, start time.Time) (*Result, error) {
	resumed := r.opts.Resume != nil
	if !resumed {
		if err := r.store.writeJSON("snapshot.json", r.snapshot(input)); err != nil {
			return nil, err
		}
	}
	if err := r.store.fact(&Fact{Type: "run", Time: start, RunID: r.opts.RunID, Flow: r.plan.Root.Name, Status: "running", Input: input, Resumed: resumed}); err != nil {
		return nil, err
	}
	r.emit(&Event{Type: "run.start", Run: r.opts.RunID, Dir: r.dir})
	// report.html is refreshed while the run goes on, and written once more
	// at the end; the refresher is owned here and ends with the run.
	refresh := make(chan struct{})
	var refresher conc.WaitGroup
	refresher.Go(func() { r.refreshReport(refresh) })
	fr := (&frame{flow: r.plan.Root, scopes: map[string]string{"flow": "_flow"}}).withBudget(r.plan.Root.Budget, "flow "+r.plan.Root.Name)
	vars := make(map[string]any, len(r.plan.Root.Nodes)+1)
	vars["input"] = input
	out, fail := r.sequence(ctx, fr, r.plan.Root.Nodes, vars, "")
	res := &Result{RunID: r.opts.RunID, Dir: r.dir, OK: fail == nil, Output: out, Failure: fail}
	res.Usage = r.usage.total()
	ok := res.OK
	// The run's output is made of its visits' outputs, which the journal
	// has: it goes to output.json, not into the journal a second time.
	endErr := r.store.fact(&Fact{Type: "run", Time: time.Now(), RunID: r.opts.RunID, Status: res.Status(), OK: &ok, Error: res.Failure, WallMS: time.Since(start).Milliseconds()})
	r.emit(&Event{Type: "run.end", Run: r.opts.RunID, Status: res.Status(), OK: &ok, Error: res.Failure, Usage: &res.Usage, WallMS: time.Since(start).Milliseconds(), Dir: r.dir})
	close(refresh)
	refresher.Wait()
	// The journal is written back while output.json, usage.json and
	// report.html are written.
	r.store.seal()
	var outErr, usageErr, reportErr error
	var finish conc.WaitGroup
	finish.Go(func() {
		outErr = r.store.writeSpooled("output.json", func(sp *spool) error { return encodeOutput(sp, out) })
	})
	finish.Go(func() {
		usageErr = r.store.writeSpooled("usage.json", func(sp *spool) error { r.usage.encode(sp); return nil })
	})
	finish.Go(func() { reportErr = r.writeReport() })
	finish.Wait()
	return res, errors.Join(endErr, outErr, usageErr, reportErr)
}

// encodeOutput writes the run's output as output.json holds it. A list,
// the output of a map, is written an item at a time.
func encodeOutput(sp *spool, out any) error {
	list, ok := out.([]any)
	if !ok {
		var err error
		sp.b, err = appendAny(sp.b, out)
		sp.b = append(sp.b, '\n')
		if err != nil {
			return fmt.Errorf("encoding the run's output: %w", err)
		}
		return nil
	}
	sp.b = append(sp.b, '[')
	for i, v := range list {
		if i > 0 {
			sp.b = append(sp.b, ',')
		}
		var err error
		if sp.b, err = appendAny(sp.b, v); err != nil {
			return fmt.Errorf("encoding the run's output: %w", err)
		}
		sp.flush()
	}
	sp.b = append(sp.b, "]\n"...)
	return nil
}

// emit writes an event and hands it to OnEvent. The event it is given
// does not outlive the call (OnEvent gets a copy), so callers' events stay
// on their stacks: a visit emits two.
func (r *runner) emit(e *Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Run = r.opts.RunID
	r.store.event(e)
	if r.opts.OnEvent != nil {
		handed := *e
		r.opts.OnEvent(&handed)
	}
}

func (r *runner) snapshot(input any) map[string]any {
	fl := map[string]any{}
	for name, f := range r.plan.Flows {
		fl[name] = map[string]any{"file": f.File, "source": string(f.Doc.Source)}
	}
	return map[string]any{
		"run":   r.opts.RunID,
		"flow":  r.plan.Root.Name,
		"file":  r.plan.Root.File,
		"flows": fl, "agents": r.plan.Agents, "input": input,
		"settings": map[string]any{
			"model": r.opts.Model, "timeout": r.opts.Timeout.String(), "concurrency": r.opts.Concurrency,
			"workdir": r.opts.WorkDir, "config": r.opts.Settings,
		},
	}
}

func checkInput(f *flows.Flow, in any) (any, error) {
	if f.Input == nil || f.Input.Kind == schema.TString {
		switch v := in.(type) {
		case nil:
			return "", nil
		case string:
			return v, nil
		}
		return nil, &InputError{Msg: fmt.Sprintf("flow %s takes a string input, got %T", f.Name, in)}
	}
	v := f.Input.WithDefaults(in)
	if err := f.Input.Check(v); err != nil {
		return nil, &InputError{Msg: fmt.Sprintf("input of flow %s: %v (declared %s)", f.Name, err, f.Input)}
	}
	return normalize(f.Input, v), nil
}

// planSize counts the nodes of every flow of p.
func planSize(p *flows.Plan) int {
	n := 0
	for _, f := range p.Flows {
		flows.Walk(f.Nodes, func(*flows.Node) { n++ })
	}
	return n
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
				err = &RefusedError{Msg: fmt.Sprintf("%s: agent %q uses driver %q, which this build of flow does not provide yet", n.Pos, n.Agent.Name, n.Agent.Driver)}
			}
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// While a run goes on, events and the start facts of running leaves are
// flushed every flushEvery, and report.html is refreshed every reportEvery.
const (
	flushEvery  = 250 * time.Millisecond
	reportEvery = 2 * time.Second
)

func (r *runner) refreshReport(done <-chan struct{}) {
	t := time.NewTicker(flushEvery)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			r.store.flushEvents()
			_ = r.store.flushStarts() // an error shows again at the next end fact
			if time.Since(last) >= reportEvery {
				_ = r.writeReport() // best effort: the final write reports errors
				last = time.Now()
			}
		}
	}
}

func (r *runner) writeReport() error {
	runs, visits := r.store.record()
	info, err := summarize(r.dir, runs)
	if err != nil {
		return err
	}
	info.Usage = r.usage.total()
	if info.Status == "interrupted" { // the run fact that ends it is not written yet
		info.Status = "running"
	}
	return renderReport(r.dir, info, visits)
}
