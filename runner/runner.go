package runner

import (
	"context"
	"errors"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/temporal"
)

// Host is the wiring of a run's host in this process (local.Config):
// where the run is kept (RunsDir) and works (WorkDir), what runs its
// leaves, its delegation server. Every run is started with it and the
// walker's settings (engine.Options), each its own argument. A caller
// gives a run's RunsDir and WorkDir; a Runner's backends give the rest,
// the process's drivers and command runner, reuse and the delegation
// server, where the caller gave none.
type Host = local.Config

// Backend is where runs are walked. Start, Resume and Attach return when
// the run ended (or was stopped, or let go), with its run directory
// written; an error with a nil Result means the run could not start or be
// taken up (bad input: *engine.InputError; refused: *engine.RefusedError;
// held by another process: rundir.ErrLocked). A run that started and
// failed is a Result with OK false, not an error. Every implementation is
// safe for concurrent use.
type Backend interface {
	// Start checks opts.Input against the flow's declared input and opts
	// against the plan, creates the run directory (opts.RunID, or a fresh
	// id, under host.RunsDir) and walks plan to its end.
	Start(ctx context.Context, plan *flows.Plan, host Host, opts engine.Options) (*engine.Result, error)
	// Resume continues the run in dir from its first unended visit, with
	// the run's snapshot (its flows, agents, input and settings): nothing
	// that ended runs again. host gives the leaves (its RunsDir and
	// WorkDir are the run's own), opts the live view and a new timeout
	// (Settings.Timeout), if any (its RunID and Input are the run's own).
	// A run walked on Temporal is re-attached to there.
	Resume(ctx context.Context, dir string, host Host, opts engine.Options) (*engine.Result, error)
	// Attach follows a run that something else started — a Temporal
	// Schedule's fire, by its id — into a new run directory under runsDir,
	// until it ends, with opts's OnEvent and Asker (who answers its
	// asks). A backend that walks runs only in this process has nothing
	// to attach to (ErrNotAttachable).
	Attach(ctx context.Context, runsDir, id string, opts engine.Options) (*engine.Result, error)
	// Stop ends a run that Start, Resume or Attach walks under a context
	// cancel cancels. StopRun stops it as Ctrl-C does (running visits end
	// `stopped`; it stays resumable). LetGo ends only this process's part:
	// a run on Temporal goes on there (its Start returns ErrDetached), and
	// a run walked here, which cannot go on without this process, stops.
	Stop(cancel context.CancelCauseFunc, how Stopping)
	// Schedules keeps the schedules of the flows of dir where the backend
	// fires them itself (Temporal Schedules), or is nil: this process's
	// scheduler fires them, and starts each run with Start.
	Schedules(dir string) Schedules
}

// Stopping says how Stop ends a run.
type Stopping int

// The ways to stop a run.
const (
	StopRun Stopping = iota // the run ends stopped, resumable
	LetGo                   // this process lets go; the run goes on if it can
)

// ErrStopped, as the cause of a run's cancellation, stops the run
// (Stop(…, StopRun)). ErrDetached is the error of a Start, Resume or
// Attach whose run was let go and goes on on Temporal.
var (
	ErrStopped  = engine.ErrStopped
	ErrDetached = temporal.ErrDetached
	// ErrLetGoWaiting is the ErrDetached of a run let go while it holds
	// nothing but waits (TemporalConfig.LetGoWhileWaiting).
	ErrLetGoWaiting = temporal.ErrLetGoWaiting
)

// ErrNotAttachable says a backend walks runs only in this process: there
// is no run elsewhere to attach to.
var ErrNotAttachable = errors.New("runs are walked in this process; there is no run elsewhere to attach to")

// Schedules are a directory's schedules kept by a backend that fires them
// itself (*temporal.Schedules).
type Schedules interface {
	// Sync makes the schedules those of the flows given, by name.
	Sync(ctx context.Context, scheduled map[string]Scheduled) error
	// Fired lists the runs the schedules started recently or that still
	// run, for the caller to Attach to.
	Fired(ctx context.Context) ([]Fired, error)
	// NextFire is the next fire of flow's schedule, zero if unknown.
	NextFire(ctx context.Context, flow string) time.Time
}

// Scheduled is a flow to keep a schedule for; Fired is a run a schedule
// started.
type (
	Scheduled = temporal.Scheduled
	Fired     = temporal.Fired
)

// CheckInput checks a run's input against the flow's declared input and
// fills in its defaults, as Start does before anything runs: for a caller
// that must refuse bad input before it has a run to start (a sweep's
// cells, the API's request). A misfit is an *engine.InputError.
func CheckInput(plan *flows.Plan, in any) (any, error) { return engine.CheckInput(plan.Root, in) }

// stop is every backend's Stop: canGoOn says whether the backend's runs go
// on without this process.
func stop(cancel context.CancelCauseFunc, how Stopping, canGoOn bool) {
	if how == LetGo && canGoOn {
		cancel(ErrDetached)
		return
	}
	cancel(ErrStopped)
}

// Checker is a Backend that can say, before any run exists, that it
// cannot run a plan (a run on Temporal whose isolated scope has no remote
// the workers reach): flow serve answers a start with it as a 400.
type Checker interface {
	Check(ctx context.Context, plan *flows.Plan, host Host, opts engine.Options) error
}

// Check is b's Checker's word on plan, or nil when b has none: a backend
// that walks runs here refuses nothing before its run starts.
func Check(ctx context.Context, b Backend, plan *flows.Plan, host Host, opts engine.Options) error {
	if c, ok := b.(Checker); ok {
		return c.Check(ctx, plan, host, opts)
	}
	return nil
}
