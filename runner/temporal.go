package runner

import (
	"context"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
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
	// Key encrypts the runs' payloads (temporal.DataConverter); the
	// client's connection must have been dialled with it.
	Key temporal.Key
	// Load says which drivers exist and the default one (what a workflow
	// loads the snapshot with), and where the agents of a run that was
	// walked here come from when it resumes.
	Load flows.Options
	// Heartbeat and SessionWait bound a visit's activity (temporal.Timing);
	// zero takes Temporal's defaults of flow.
	Heartbeat, SessionWait time.Duration
	// LetGoWhileWaiting ends a Start, Resume or Attach with
	// ErrLetGoWaiting once the run holds nothing but waits: it goes on
	// on Temporal when one may end, and whoever followed it re-attaches
	// then (flow serve --temporal; docs/waits.md, On Temporal).
	LetGoWhileWaiting bool
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
	return &Temporal{load: cfg.Load, c: &temporal.Client{Client: c, Key: cfg.Key, Address: cfg.Address, Namespace: cfg.Namespace, TaskQueue: cfg.TaskQueue,
		Load:   temporal.LoadOptions{DefaultDriver: cfg.Load.DefaultDriver, Drivers: cfg.Load.Drivers},
		Timing: temporal.Timing{Heartbeat: cfg.Heartbeat, SessionWait: cfg.SessionWait}, LetGoWhileWaiting: cfg.LetGoWhileWaiting}}
}

// TemporalKey encrypts what runs put in Temporal's history
// (temporal.Key; docs/temporal.md, What Temporal keeps).
type TemporalKey = temporal.Key

// ParseTemporalKey reads a key as configured (temporal.key); "" is none.
func ParseTemporalKey(s string) (TemporalKey, error) { return temporal.ParseKey(s) }

// ParseTemporalKeys reads the key that seals (temporal.key) and the old
// keys that still open (temporal.old_keys).
func ParseTemporalKeys(key string, old []string) (TemporalKey, error) {
	return temporal.ParseKeys(key, old)
}

// TemporalTroubleNote starts the notes the mirror of a Temporal run makes
// of what holds it up (a worker without its key, a refused signal).
const TemporalTroubleNote = temporal.TroubleNote

// TemporalConverters are what a client of runs and workers is dialled
// with for key: every payload and failure sealed with it.
func TemporalConverters(key TemporalKey) (converter.DataConverter, converter.FailureConverter) {
	return temporal.DataConverter(key), temporal.FailureConverter(key)
}

// TemporalPropagators are the context propagators a client of runs and
// workers is dialled with: a traced run's span context reaches the
// workers (docs/tracing.md), whose agents and commands get it as
// TRACEPARENT.
func TemporalPropagators() []workflow.ContextPropagator {
	return []workflow.ContextPropagator{temporal.TraceContext{}}
}

// Start starts the run workflow and mirrors it until the run ends. With
// opts.Asker, its asks wait for an answer from it (Temporal signals);
// without, they take their defaults.
func (t *Temporal) Start(ctx context.Context, plan *flows.Plan, host Host, opts engine.Options) (*engine.Result, error) {
	return t.c.Execute(ctx, plan, host, opts)
}

// Check refuses what a run of plan cannot do on Temporal, before any run
// exists (Checker).
func (t *Temporal) Check(ctx context.Context, plan *flows.Plan, host Host, opts engine.Options) error {
	return t.c.Check(ctx, plan, host, opts)
}

// Resume re-attaches to the run in dir on Temporal (or resumes it in a new
// workflow execution when it ended resumable); a run that was walked in
// this process resumes here.
func (t *Temporal) Resume(ctx context.Context, dir string, host Host, opts engine.Options) (*engine.Result, error) {
	if snap, err := rundir.ReadSnapshot(dir); err == nil && snap.Temporal != nil {
		return t.c.AttachAsking(ctx, dir, opts.OnEvent, opts.Asker)
	}
	return Local{Load: t.load}.Resume(ctx, dir, host, opts)
}

// Attach mirrors into runsDir the run a Temporal Schedule started.
func (t *Temporal) Attach(ctx context.Context, runsDir, id string, opts engine.Options) (*engine.Result, error) {
	return t.c.Adopt(ctx, runsDir, id, opts.OnEvent, opts.Asker)
}

// Stop cancels the workflow (StopRun), or detaches from it (LetGo): the
// run goes on on Temporal, and the next Resume re-attaches.
func (t *Temporal) Stop(cancel context.CancelCauseFunc, how Stopping) { stop(cancel, how, true) }

// Schedules are Temporal Schedules, one per scheduled flow of dir.
func (t *Temporal) Schedules(dir string) Schedules { return t.c.NewSchedules(dir) }

// CheckTemporal refuses what a run of plan on Temporal cannot do, before
// anything of the run is made: isolated scopes whose repository has no
// remote the workers reach (docs/temporal.md, "Working copies on
// workers"). flow validate --temporal says it; Start does it too.
func CheckTemporal(ctx context.Context, plan *flows.Plan, workDir string) error {
	return temporal.CheckWorkspace(ctx, plan, workDir)
}

// WithTrigger says why the runs started with ctx start (flow serve's
// trigger), which a run on Temporal carries in its memo and search
// attributes (docs/temporal.md, Finding runs in Temporal).
func WithTrigger(ctx context.Context, trigger string) context.Context {
	return temporal.WithTrigger(ctx, trigger)
}

// OnTemporal is the backend of the Temporal server c is connected to,
// with every concern of the runner (flow run --temporal, flow sweep
// --temporal, flow serve --temporal). cfg.Load is the runner's. The
// caller closes c after the backend's last run.
//
// Of leaves, only Reuse applies: the runs' leaves run on the workers,
// and the recordings it names are handed to each run's workflow
// (docs/reuse-and-tests.md, "On Temporal").
func (r *Runner) OnTemporal(c client.Client, cfg TemporalConfig, leaves ...LeafOption) Backend {
	cfg.Load = r.cfg.Load
	t := OnTemporal(c, cfg)
	t.c.Reuse = leafOptions(leaves).reuse
	return &hosted{r: r, inner: t, leaves: leafOptions(nil)}
}

// WorkerConfig is where a worker's visits run on its machine (flow
// worker's flags).
type WorkerConfig struct {
	// RunsDir keeps the homes and transcripts; WorkDir, if set, is where
	// visits work (temporal.Activities).
	RunsDir, WorkDir string
	// Concurrency is the most visits at once; 0 is Temporal's default.
	Concurrency int
}

// Worker is a worker of task queue on the Temporal server c is connected
// to, whose visits run with this process's drivers, command runner and
// secrets, as a run of flow run here would run them.
func (r *Runner) Worker(c client.Client, queue string, w WorkerConfig) *temporal.Worker {
	acts := &temporal.Activities{Leaves: local.Leaves{Drivers: r.drivers, Commands: r.commands}, RunsDir: w.RunsDir, WorkDir: w.WorkDir,
		Concurrency: w.Concurrency, Secrets: r.Secrets()}
	return temporal.NewWorker(c, queue, acts)
}
