package runner

import (
	"context"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/trace"
	"github.com/flowrun/flow/reuse"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/temporal"
)

// hosted is a backend of the Runner: inner walks the runs, and every run
// it starts, resumes or attaches to gets what the process shares (fill),
// its drivers checked first (preflight) where its leaves run here, its
// leaves answered as the LeafOptions say, and a trace.
type hosted struct {
	r      *Runner
	inner  Backend
	local  bool // inner walks the runs in this process
	leaves leafOpts
}

var _ Backend = (*hosted)(nil)

func (h *hosted) Start(ctx context.Context, plan *flows.Plan, host Host, opts engine.Options) (*engine.Result, error) {
	host, opts = h.r.fill(host, opts)
	if h.local {
		if err := h.wire(&host); err != nil {
			return nil, err
		}
		if h.leaves.live {
			if err := h.r.preflight(ctx, plan); err != nil {
				return nil, err
			}
		}
	}
	return h.r.traced(ctx, plan.Root.Name, func(ctx context.Context) (*engine.Result, error) { return h.inner.Start(ctx, plan, host, opts) })
}

// Check is the inner backend's, with what the process shares filled in.
func (h *hosted) Check(ctx context.Context, plan *flows.Plan, host Host, opts engine.Options) error {
	host, opts = h.r.fill(host, opts)
	return Check(ctx, h.inner, plan, host, opts)
}

func (h *hosted) Resume(ctx context.Context, dir string, host Host, opts engine.Options) (*engine.Result, error) {
	host, opts = h.r.fill(host, opts)
	snap, err := rundir.ReadSnapshot(dir)
	here := h.local || (err == nil && snap.Temporal == nil)
	if here {
		if err := h.wire(&host); err != nil {
			return nil, err
		}
	}
	if err == nil && here && h.leaves.live {
		// The drivers the rest of the run needs, checked before it goes
		// on (a snapshot that does not load is the backend's to report).
		if plan, diags := flows.Reload(snap.File, snap.Sources(), snap.Agents, snap.Settings.WorkDir, h.r.cfg.Load); !diags.HasErrors() {
			if err := h.r.preflight(ctx, plan); err != nil {
				return nil, err
			}
		}
	}
	flow := ""
	if err == nil {
		flow = snap.Flow
	}
	return h.r.traced(ctx, flow, func(ctx context.Context) (*engine.Result, error) { return h.inner.Resume(ctx, dir, host, opts) })
}

func (h *hosted) Attach(ctx context.Context, runsDir, id string, opts engine.Options) (*engine.Result, error) {
	_, opts = h.r.fill(Host{}, opts)
	return h.inner.Attach(ctx, runsDir, id, opts)
}

func (h *hosted) Stop(cancel context.CancelCauseFunc, how Stopping) { h.inner.Stop(cancel, how) }

func (h *hosted) Schedules(dir string) Schedules {
	s := h.inner.Schedules(dir)
	if s == nil {
		return nil
	}
	return filledSchedules{Schedules: s, r: h.r}
}

// wire gives a run walked here its leaves, as the LeafOptions say, and
// its delegation server.
func (h *hosted) wire(host *Host) error {
	if host.Leaves == nil {
		live := local.Leaves{Drivers: host.Drivers, Commands: host.Commands}
		l, err := h.leaves.make(live)
		if err != nil {
			return err
		}
		host.Leaves = l
	}
	delegates(host)
	return nil
}

// traced runs start inside a trace of flow when the OTLP environment asks
// for one (docs/tracing.md): every run started or resumed through a
// Runner's backend — flow run, resume, test, fork, sweep cells, served
// runs — comes here. start gets the context holding the run's span: the
// processes it starts get it as TRACEPARENT (internal/proc), and a
// Temporal worker through the workflow's headers (temporal.TraceContext).
// A trace that cannot be sent is a warning: the run's outcome does not
// depend on it.
func (r *Runner) traced(ctx context.Context, flow string, start func(context.Context) (*engine.Result, error)) (*engine.Result, error) {
	if !trace.Enabled() {
		return start(ctx)
	}
	tr, err := trace.Start(ctx, flow, r.cfg.Secrets())
	if err != nil {
		return nil, &engine.RefusedError{Msg: err.Error()}
	}
	res, err := start(tr.Context())
	id, dir, ok := "", "", false
	if res != nil {
		id, dir, ok = res.RunID, res.Dir, res.OK
	}
	if terr := tr.End(id, dir, ok); terr != nil {
		r.warn("traces not sent: %s", terr)
	}
	return res, err
}

// filledSchedules are a backend's schedules whose runs get what the
// process shares, as a run started here does.
type filledSchedules struct {
	Schedules
	r *Runner
}

func (s filledSchedules) Sync(ctx context.Context, scheduled map[string]Scheduled) error {
	filled := make(map[string]Scheduled, len(scheduled))
	for name, sc := range scheduled {
		sc.Host, sc.Opts = s.r.fill(sc.Host, sc.Opts)
		filled[name] = sc
	}
	return s.Schedules.Sync(ctx, filled)
}

// A LeafOption says how the runs of a Local backend have their leaves
// answered; without one, by the process's drivers and command runner.
type LeafOption func(*leafOpts)

type leafOpts struct {
	live bool // the drivers answer turns: their CLIs and servers must be there
	make func(live engine.LeafRunner) (engine.LeafRunner, error)
	// reuse names the recordings of Reuse, for a run on Temporal, whose
	// leaves are not this process's (temporal.ReuseFrom).
	reuse *temporal.ReuseFrom
}

func leafOptions(opts []LeafOption) leafOpts {
	lo := leafOpts{live: true, make: func(live engine.LeafRunner) (engine.LeafRunner, error) { return live, nil }}
	for _, o := range opts {
		o(&lo)
	}
	return lo
}

// Reuse answers a visit whose key one of the runs in dirs recorded from
// it, and runs the others live (flow run --reuse; docs/reuse-and-tests.md).
// runsDir is this machine's runs directory (reuse.Open).
func Reuse(runsDir string, dirs ...string) LeafOption {
	return func(lo *leafOpts) {
		lo.reuse = &temporal.ReuseFrom{RunsDir: runsDir, Dirs: dirs}
		lo.make = func(live engine.LeafRunner) (engine.LeafRunner, error) {
			set, err := reuse.Open(runsDir, dirs...)
			if err != nil {
				return nil, err
			}
			return &reuse.Leaves{From: set, Next: live}, nil
		}
	}
}

// Fork answers a fork's leaves (flow fork; docs/fork-and-diff.md): set
// gives outputs without running, a visit reach reaches runs live, and
// every other is answered from the run in dir when it recorded one.
func Fork(runsDir, dir string, reach *reuse.Reach, set map[string]any) LeafOption {
	return func(lo *leafOpts) {
		lo.make = func(live engine.LeafRunner) (engine.LeafRunner, error) {
			from, err := reuse.Open(runsDir, dir)
			if err != nil {
				return nil, err
			}
			return &reuse.ForkLeaves{Reach: reach, Set: set, From: &reuse.Leaves{From: from, Next: live}}, nil
		}
	}
}

// Answered has every leaf answered by l, with no driver (flow test's
// cassette, flow plan --reuse's dry walk): nothing is preflighted.
func Answered(l engine.LeafRunner) LeafOption {
	return func(lo *leafOpts) {
		lo.live = false
		lo.make = func(engine.LeafRunner) (engine.LeafRunner, error) { return l, nil }
	}
}

// Replay are leaves that answer every turn from the recording set, and
// every command too unless its node says reuse: never; with liveCommands
// every command runs for real with the process's command runner (flow
// test; docs/reuse-and-tests.md).
func (r *Runner) Replay(set *reuse.Set, liveCommands bool) *reuse.Leaves {
	return &reuse.Leaves{From: set, Commands: r.commands, LiveCommands: liveCommands}
}
