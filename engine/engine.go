package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/flowrun/flow/engine/delegation"
	"github.com/flowrun/flow/engine/ledger"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/engine/replay"
	"github.com/flowrun/flow/engine/worktrees"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/ordered"
	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/schema"
)

// Options are the walker's settings of one run: what it walks with and
// how, the same wherever it walks. The zero value of each field has a
// documented default. Where the run happens — its drivers, command runner,
// run directory, working directory, runtime and delegation server — is the
// host's own configuration (local.Config in package engine/local; a
// Temporal workflow's host in package temporal), never an Option: the
// walker reads the host only through Host (TestOptionsHoldNoHostWiring in
// internal/archtest).
type Options struct {
	RunID string // default: a fresh one (rundir.NewRunID)
	Input any    // the run's input, before defaults
	// Settings are the run-wide overrides of model and timeout (docs/flow-files.md, agent),
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
	OnEvent func(*record.Event)
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
	// Repeat is a sweep cell's repeat (from 1): part of every visit key,
	// since repeats are distinct samples (docs/reuse-and-tests.md).
	Repeat int
	// Repos are the commits the run started at, by repository (the
	// snapshot's Repos): where isolated scopes begin. The host that
	// records the snapshot sets them.
	Repos      map[string]string
	ForkedFrom *record.Fork // a fork's origin (flow fork), on its start fact
	// Notes are said as the run starts, after its start event (a
	// resume's: what changed, what was ended).
	Notes []string
	// Killed is what a resumed run's killed attempts had reported
	// spending, by visit (rundir.Killed): a visit that runs again counts
	// it, marked partial (docs/resume-and-budgets.md).
	Killed map[string]int64
}

// Result is how a run ended.
type Result struct {
	RunID   string
	Dir     string
	OK      bool
	Output  any
	Failure *record.Failure // nil when OK
	Usage   record.Usage
	// Overspend names each budget the run ended above, by how much and
	// why; the run's end fact records the same.
	Overspend []record.Overspend
	// InfraInTree says a delegated child failed on the infrastructure
	// (rate_limit, unavailable, killed; docs/delegation.md): its parent's
	// answer was not kept. The run's end fact records the same.
	InfraInTree bool
}

// Status is the run's status: succeeded, failed, stopped or waiting.
func (r *Result) Status() record.Status {
	switch {
	case r.OK:
		return record.StatusSucceeded
	case r.Failure != nil && r.Failure.Root().Kind == schema.FailStopped:
		return record.StatusStopped
	case parked(r.Failure):
		return record.StatusWaiting
	}
	return record.StatusFailed
}

// Walk runs plan on host (the local host's run directory and processes,
// package engine/local; a Temporal workflow walking the plan it rebuilt
// from the run's snapshot): every effect of the walk is one of host's,
// and where leaves work is host's WorkDir. opts.RunID names the run;
// earlier holds the facts of earlier attempts when the run resumes.
// Walk neither creates a run directory nor ends processes: host owns
// where facts and processes live. Isolated scopes need the host's
// Workspace: a plan with them is refused on a host that has none.
func Walk(ctx context.Context, plan *flows.Plan, opts Options, host Host, earlier []*record.Fact) (*Result, error) {
	input, err := opts.Prepare(plan)
	if err != nil {
		return nil, err
	}
	if host.Delegator() == nil {
		if err := RefuseDelegation(plan); err != nil {
			return nil, err
		}
	}
	if host.Waiter() == nil {
		if n := waitingNode(plan); n != nil {
			return nil, &RefusedError{Msg: fmt.Sprintf("%s: wait %q needs a host that keeps waits (docs/waits.md)", n.Pos, n.ID)}
		}
	}
	if host.Workspace() == nil {
		if n := firstNode(plan, func(n *flows.Node) bool { return n.Isolation }); n != nil {
			return nil, &RefusedError{Msg: fmt.Sprintf("%s: isolation: worktree needs the run's working copy on this machine; run it with flow run, not on remote workers", n.Pos)}
		}
	}
	return walk(ctx, plan, opts, host, input, earlier, slices.Clip(opts.Notes)...)
}

// Prepare is the one check of every entry: the input against the flow's
// declared input (its defaults filled in), then the options (check),
// their defaults filled in. It returns the input as the run takes it.
// What a host must give (leaves for every driver, a delegation server)
// is the host's to check (package engine/local; Walk for the Host's
// Delegator).
func (o *Options) Prepare(plan *flows.Plan) (any, error) {
	input, err := checkInput(plan.Root, o.Input, true)
	if err != nil {
		return nil, err
	}
	return input, o.check(plan)
}

// check fills in defaults and refuses a run that could not go through.
func (o *Options) check(plan *flows.Plan) error {
	if o.Asker == nil {
		if n := firstNode(plan, func(n *flows.Node) bool { an := n.AsAsk(); return an != nil && !an.HasDefault }); n != nil {
			return &RefusedError{Msg: fmt.Sprintf("%s: ask %q has no default and nobody is at the terminal to answer it; add default: or run it in a terminal", n.Pos, n.ID)}
		}
	}
	o.Concurrency = plan.Concurrency(o.Concurrency)
	if o.Backoff <= 0 {
		o.Backoff = time.Second
	}
	return nil
}

// walk runs the plan, each fact and event into rec, and its output into
// rec's Finish.
func walk(ctx context.Context, plan *flows.Plan, opts Options, host Host, input any, earlier []*record.Fact, notes ...string) (*Result, error) {
	rec := host
	r := &runner{plan: plan, opts: opts, dir: host, rt: host, leaves: host, live: opts.Live, redactor: host.Redactor(), workspace: host.Workspace(), blind: host.Blind(), rootDir: host.WorkDir(),
		mu: host.NewLock(), sessions: map[record.Scope]*session{}, ledger: newLedger(host),
		waiter: host.Waiter(), waits: map[string]*record.Fact{},
		delegates: host.Delegator(), delegators: map[string]*delegator{}, children: delegation.NewRegistry(host.NewLock()), infra: delegation.NewInfra(host.NewLock())}
	r.wt, r.journal = r.newScopes(), replay.NewJournal(earlier, host.NewLock())
	r.keys = r.newKeys(runDir(host, opts.RunID))
	if r.live == nil {
		r.live = host.NewSemaphore(opts.Concurrency)
	}
	notes = append(notes, r.replay(earlier)...)
	start := r.rt.Now()
	if err := rec.Fact(record.RunStarted{Time: start, Run: opts.RunID, Flow: plan.Root.Name, Input: input, Resumed: earlier != nil, ForkedFrom: opts.ForkedFrom}.Fact()); err != nil {
		return nil, err
	}
	shown := runDir(host, opts.RunID) // as the user named it
	r.emit(&record.Event{Type: record.EventRunStart, Dir: shown})
	for _, n := range notes {
		r.emit(&record.Event{Type: record.EventNote, Message: n})
	}
	fr := (&frame{rt: host, calls: &flows.Calls{Flow: plan.Root}, scopes: map[string]string{"flow": "_flow"}}).withBudget(plan.Root.Budget, "flow "+plan.Root.Name)
	values := map[string]any{"input": input} // the root sequence adds each node's value by id
	out, fail := r.sequence(ctx, fr, plan.Root.Nodes, values, "")
	r.wt.CloseOwned(ctx, "_flow")
	plain := flows.ShownValue(out) // the output as printed and kept: no empty errors
	// What the caller prints is as redacted as what the run directory
	// holds.
	res := &Result{RunID: opts.RunID, Dir: shown, OK: fail == nil, Output: secret.Value(r.secrets(), plain),
		Failure: redactFailure(r.secrets(), fail), Usage: r.total(), Overspend: r.ledger.Overspends(), InfraInTree: r.infra.InTree()}
	end := r.rt.Now()
	wall := end.Sub(start).Milliseconds()
	// The run's output is made of its visits' outputs, which the journal
	// has: it goes to output.json, not into the journal a second time.
	endErr := rec.Fact(record.RunEnded{Time: end, Run: opts.RunID, Status: res.Status(), OK: res.OK, Error: res.Failure, WallMS: wall, Overspend: res.Overspend, InfraInTree: res.InfraInTree}.Fact())
	r.emit(&record.Event{Type: record.EventRunEnd, Status: res.Status(), OK: &res.OK, Error: res.Failure, Usage: &res.Usage, WallMS: wall, Dir: shown, Overspend: res.Overspend})
	return res, errors.Join(endErr, rec.WriteValues(values), rec.Finish(plain))
}

// runDir is the run's directory as the host names it, else its id.
func runDir(host Host, runID string) string {
	if d := host.RunDir(); d != "" {
		return d
	}
	return runID
}

// secrets are the host's redactor, or nil where the leaves redact where
// they run.
func (r *runner) secrets() *secret.Redactor { return r.redactor }

// redactHome redacts what was written into the home of path since start.
func (r *runner) redactHome(path string, since time.Time) error { return r.dir.RedactHome(path, since) }

// redactFailure returns f with its messages redacted, as a copy when it
// held a secret.
func redactFailure(secrets *secret.Redactor, f *record.Failure) *record.Failure {
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
	plan *flows.Plan
	opts Options
	dir  Recorder
	// redactor and workspace are the host's (Host.Redactor, Host.Workspace).
	redactor  *secret.Redactor
	workspace worktrees.Workspace
	blind     bool   // the host's turns cannot be watched live (Parts.Blind)
	rootDir   string // where leaves work outside isolated scopes (Host.WorkDir)
	rt        Runtime
	leaves    LeafRunner
	live      Semaphore // the run-wide cap on live agent turns

	mu       Locker
	sessions map[record.Scope]*session
	journal  *replay.Journal // what earlier attempts recorded (resume)
	keys     *replay.Keys    // the keys of its leaf visits
	ledger   *ledger.Ledger  // what turns cost, and the budgets they overspent
	usage    record.Usage    // what every visit spent, earlier attempts' included

	wt *worktrees.Scopes // isolated scopes and their repositories (docs/worktrees.md)

	// delegation (docs/delegation.md): the host's Delegator (nil: no turn
	// may delegate), the visits that may start children, and the children
	// of this attempt and of earlier ones.
	delegates  Delegator
	delegators map[string]*delegator
	children   *delegation.Registry
	infra      *delegation.Infra

	// waiter is the host's (Host.Waiter); waits are the waits earlier
	// attempts journaled, by visit (docs/waits.md).
	waiter Waiter
	waits  map[string]*record.Fact
}

// emit writes an event and hands it to OnEvent.
func (r *runner) emit(e *record.Event) {
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
func (r *runner) spent(u *record.Usage) {
	if u == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.usage.Add(*u)
}

func (r *runner) total() record.Usage {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.usage
}

// CheckInput checks a run's input against the flow's declared input and
// fills in its defaults, as every entry does before anything runs; a sweep
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

// firstNode is the first node of p that is, in flows by name, or nil.
func firstNode(p *flows.Plan, is func(n *flows.Node) bool) *flows.Node {
	var found *flows.Node
	for _, f := range flowsInOrder(p) {
		flows.EachNode(f.Nodes, func(n *flows.Node) {
			if found == nil && is(n) {
				found = n
			}
		})
	}
	return found
}

// flowsInOrder are p's flows by name, so that a refusal names the same
// node every time when several would do.
func flowsInOrder(p *flows.Plan) []*flows.Flow {
	out := make([]*flows.Flow, 0, len(p.Flows))
	for _, name := range ordered.Keys(p.Flows) {
		out = append(out, p.Flows[name])
	}
	return out
}
