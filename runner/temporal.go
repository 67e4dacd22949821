package runner

import (
	"context"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/temporal"
)

// TemporalConfig says where runs go on Temporal and how their visits run
// there (docs/temporal.md).
type TemporalConfig struct {
	// Address and Namespace are recorded in each run's snapshot, for
	// flow resume to re-attach; TaskQueue is DefaultTaskQueue if empty.
	Address, Namespace, TaskQueue string
	// Load says which drivers exist and the default one (what a workflow
	// loads the snapshot with), and where the agents of a run that was
	// walked here come from when it resumes.
	Load flows.Options
	// Heartbeat and SessionWait bound a visit's activity (temporal.Timing);
	// zero takes Temporal's defaults of flow.
	Heartbeat, SessionWait time.Duration
}

// DefaultTaskQueue is the task queue of runs and workers if none is given.
const DefaultTaskQueue = temporal.DefaultTaskQueue

// Temporal walks each run as a run workflow on Temporal's workers and
// mirrors it into its run directory here, so that every reader of runs
// reads it as any other (flow run --temporal, flow sweep --temporal,
// flow serve --temporal).
type Temporal struct {
	c    *temporal.Client
	load flows.Options
}

var _ Backend = (*Temporal)(nil)

// OnTemporal is the backend of the Temporal server c is connected to. The
// caller closes c after the backend's last run.
func OnTemporal(c client.Client, cfg TemporalConfig) *Temporal {
	return &Temporal{load: cfg.Load, c: &temporal.Client{Client: c, Address: cfg.Address, Namespace: cfg.Namespace, TaskQueue: cfg.TaskQueue,
		Load:   temporal.LoadOptions{DefaultDriver: cfg.Load.DefaultDriver, Drivers: cfg.Load.Drivers},
		Timing: temporal.Timing{Heartbeat: cfg.Heartbeat, SessionWait: cfg.SessionWait}}}
}

// Start starts the run workflow and mirrors it until the run ends. A run
// on Temporal is unattended: its asks take their defaults.
func (t *Temporal) Start(ctx context.Context, plan *flows.Plan, opts engine.Options) (*engine.Result, error) {
	return t.c.Execute(ctx, plan, opts)
}

// Resume re-attaches to the run in dir on Temporal (or resumes it in a new
// workflow execution when it ended resumable); a run that was walked in
// this process resumes here.
func (t *Temporal) Resume(ctx context.Context, dir string, opts engine.Options) (*engine.Result, error) {
	if snap, err := rundir.ReadSnapshot(dir); err == nil && snap.Temporal != nil {
		return t.c.Attach(ctx, dir, opts.OnEvent)
	}
	return Local{Load: t.load}.Resume(ctx, dir, opts)
}

// Attach mirrors into runsDir the run a Temporal Schedule started.
func (t *Temporal) Attach(ctx context.Context, runsDir, id string, onEvent func(*engine.Event)) (*engine.Result, error) {
	return t.c.Adopt(ctx, runsDir, id, onEvent)
}

// Stop cancels the workflow (StopRun), or detaches from it (LetGo): the
// run goes on on Temporal, and the next Resume re-attaches.
func (t *Temporal) Stop(cancel context.CancelCauseFunc, how Stopping) { stop(cancel, how, true) }

// Schedules are Temporal Schedules, one per scheduled flow of dir.
func (t *Temporal) Schedules(dir string) Schedules { return t.c.NewSchedules(dir) }

// WithTrigger says why the runs started with ctx start (flow serve's
// trigger), which a run on Temporal carries in its memo and search
// attributes (docs/temporal.md, Finding runs in Temporal).
func WithTrigger(ctx context.Context, trigger string) context.Context {
	return temporal.WithTrigger(ctx, trigger)
}
