package temporal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/rundir"
)

// Client hands runs to Temporal and mirrors each into a local run
// directory, so that flow show, flow runs, flow tail and the reports read
// a Temporal run as any other. Its fields are set before first use and
// not changed after; it is then safe for concurrent use.
type Client struct {
	Client client.Client
	// Address and Namespace are recorded in each run's snapshot, for flow
	// resume to re-attach.
	Address   string
	Namespace string
	TaskQueue string // DefaultTaskQueue if empty
	// Key encrypts the runs' payloads; Client must have been dialled with
	// DataConverter(Key), which is how the client reads them here too.
	Key    Key
	Load   LoadOptions
	Timing Timing
	// Poll is how often the mirror reads the progress of the activities
	// in flight (facts it reads when the history grows, long-polled);
	// default 250 ms.
	Poll time.Duration
	// Reuse names the recordings the runs reuse from (flow run --reuse;
	// reuse.go), nil for none.
	Reuse *ReuseFrom
	// LetGoWhileWaiting ends the following of a run, with
	// ErrLetGoWaiting, once it holds nothing but waits that neither their
	// time nor their event ended yet (holds.go): the run goes on on
	// Temporal, and the follower re-attaches when one may end (flow serve
	// --temporal frees the run's slot meanwhile).
	LetGoWhileWaiting bool
}

func (c *Client) queue() string {
	if c.TaskQueue == "" {
		return DefaultTaskQueue
	}
	return c.TaskQueue
}

// Execute is local.Execute with the walk on Temporal: it creates the run
// directory as Execute does (input checked, snapshot, lock; cfg is the
// local side's wiring: the run directory, the drivers that must exist),
// starts the
// run workflow (its id is the run id), and mirrors the workflow's facts
// into the journal until the run ends, handing opts.OnEvent the events a
// local run would give. Cancelling ctx with engine.ErrStopped cancels the
// workflow, which stops the run as Ctrl-C stops a local one; the mirror
// then waits for its end. If this process dies, the workflow goes on:
// Attach (flow resume) continues the mirror.
func (c *Client) Execute(ctx context.Context, plan *flows.Plan, cfg local.Config, opts engine.Options) (*engine.Result, error) {
	if err := c.Check(ctx, plan, cfg, opts); err != nil {
		return nil, err // before the run directory: a refused run leaves nothing
	}
	reused, err := c.reused(opts)
	if err != nil {
		return nil, err
	}
	if cfg.Delegates == nil {
		// Delegate calls are served on the workers (temporal/delegate.go),
		// not by a socket of this process.
		cfg.Delegates = onWorkers
	}
	w, snap, err := local.Begin(ctx, plan, cfg, opts)
	if err != nil {
		return nil, err
	}
	snap.Temporal = &TemporalRef{Address: c.Address, Namespace: c.Namespace, TaskQueue: c.queue(), Workflow: snap.Run}
	run, err := c.start(ctx, snap, RunInput{Attended: opts.Asker != nil, Reused: reused})
	if err == nil {
		snap.Temporal.Execution = run.GetRunID()
		err = w.WriteSnapshot(snap)
	}
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	m := &mirror{c: c, w: w, ref: *snap.Temporal, onEvent: opts.OnEvent, dir: w.Dir(), relay: newRelay(opts.Asker)}
	m.relay.of(m)
	return m.run(ctx)
}

// Check refuses what a run of plan with cfg and opts could not do on Temporal,
// before anything of it exists: an isolated scope whose repository the
// workers cannot reach (CheckWorkspace), a secret that would reach
// Temporal's history in clear (refuseClear). Execute checks it first;
// flow serve --temporal checks it before it answers a start.
func (c *Client) Check(ctx context.Context, plan *flows.Plan, cfg local.Config, opts engine.Options) error {
	wd := cfg.WorkDir
	if wd == "" {
		wd, _ = os.Getwd()
	}
	if err := CheckWorkspace(ctx, plan, wd); err != nil {
		return err
	}
	return c.refuseClear(plan, cfg, opts)
}

// refuseClear refuses, before any run directory is made, a run that would
// put a secret this process knows into Temporal's history in clear: one
// whose snapshot (the flow, its input) holds it while no key encrypts.
func (c *Client) refuseClear(plan *flows.Plan, cfg local.Config, opts engine.Options) error {
	if c.Key.Set() {
		return nil
	}
	known := secret.New(append(secret.FromEnviron(os.Environ()), opts.Secrets...)...)
	if known.Empty() {
		return nil
	}
	snap, err := local.Snapshot(plan, cfg, opts)
	if err != nil {
		return nil // Begin says why
	}
	if b, err := json.Marshal(snap); err == nil && known.Contains(b) {
		return &engine.RefusedError{Msg: "the run's flow or input holds a secret, and Temporal's history would keep it in clear: " +
			"set temporal.key (FLOW_TEMPORAL_KEY) on the client and the workers (docs/temporal.md)"}
	}
	return nil
}

// converter reads and writes the payloads of workflow id as the SDK does
// for it: sealed for that workflow (docs/temporal.md, What Temporal keeps).
func (c *Client) converter(id string) converter.DataConverter {
	return converter.WithDataConverterSerializationContext(DataConverter(c.Key),
		converter.WorkflowSerializationContext{Namespace: c.Namespace, WorkflowID: id})
}

// TemporalRef is where a run lives on Temporal, as its snapshot records it.
type TemporalRef = rundir.TemporalRun

// start starts the run workflow of snap; in holds what is the run's own
// (its earlier facts, attended, reused visits, kept events) and start
// fills in the rest.
func (c *Client) start(ctx context.Context, snap *rundir.Snapshot, in RunInput) (client.WorkflowRun, error) {
	// The snapshot's relative paths were read from here, as a local run
	// (or resume) in this directory reads them.
	origin, _ := os.Getwd()
	trigger, searchable := triggerOf(ctx), c.searchable(ctx)
	in.Snapshot, in.Load, in.Timing, in.Origin, in.Searchable = snap, c.Load, c.Timing, origin, searchable
	var attrs temporal.SearchAttributes
	if searchable {
		attrs = startAttrs(snap.Flow, trigger)
	}
	run, err := c.Client.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    snap.Run,
		TaskQueue:             c.queue(),
		Memo:                  memo(snap, trigger),
		TypedSearchAttributes: attrs,
		// A run id names one run: a second start while it runs is refused;
		// after it closed, a resume starts it again.
		WorkflowIDConflictPolicy: enumspb.WORKFLOW_ID_CONFLICT_POLICY_FAIL,
		WorkflowIDReusePolicy:    enumspb.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE,
	}, WorkflowName, &in)
	if err != nil {
		return nil, fmt.Errorf("starting run %s on Temporal at %s: %w", snap.Run, c.Address, err)
	}
	return run, nil
}

// ErrNotTemporal says a run directory is not the mirror of a Temporal run.
var ErrNotTemporal = errors.New("the run was not run on Temporal")

// Attach continues the mirror of the Temporal run in dir after the process
// that mirrored it died: it takes the run directory's lock and mirrors the
// facts it lacks; nothing runs again. When the workflow had already ended
// with everything mirrored and the run may be resumed (stopped, or failed
// on a kind a resume may retry), the run resumes in a new workflow
// execution that replays every ended visit, as flow resume does locally.
func (c *Client) Attach(ctx context.Context, dir string, onEvent func(*record.Event)) (*engine.Result, error) {
	return c.AttachAsking(ctx, dir, onEvent, nil)
}

// AttachAsking is Attach with asker answering the run's asks, as Execute
// with Options.Asker does (flow serve re-attaching to its runs).
func (c *Client) AttachAsking(ctx context.Context, dir string, onEvent func(*record.Event), asker engine.Asker) (*engine.Result, error) {
	snap, err := rundir.ReadSnapshot(dir)
	if err != nil {
		return nil, err
	}
	if snap.Temporal == nil {
		return nil, fmt.Errorf("%s: %w", dir, ErrNotTemporal)
	}
	w, earlier, err := rundir.Reopen(dir)
	if err != nil {
		return nil, err
	}
	ref := *snap.Temporal
	m := &mirror{c: c, w: w, ref: ref, onEvent: onEvent, dir: w.Dir(), next: len(earlier) - ref.Base, relay: newRelay(asker), holds: newHolds(earlier)}
	m.relay.of(m)
	// Asked even when ctx ended already: a follower stopped before it
	// follows still stops the run (m.run cancels it).
	desc, err := c.Client.DescribeWorkflowExecution(context.WithoutCancel(ctx), ref.Workflow, ref.Execution)
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("finding run %s on Temporal at %s: %w", ref.Workflow, c.Address, err)
	}
	// An execution that continued as new is followed to the one running.
	if st := desc.GetWorkflowExecutionInfo().GetStatus(); st == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING || st == enumspb.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW {
		m.note(fmt.Sprintf("re-attaching to run %s on Temporal (%d facts mirrored)", ref.Workflow, len(earlier)))
		return m.run(ctx)
	}
	total, err := m.total(ctx)
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	info, _ := rundir.Inspect(dir)
	if m.next < total || info == nil || !info.Resumable {
		m.note(fmt.Sprintf("run %s ended on Temporal; mirroring the %d facts this directory lacks", ref.Workflow, total-m.next))
		return m.run(ctx)
	}
	// Everything is mirrored and the run may go on: a new execution
	// replays the ended visits from the journal.
	m.note(fmt.Sprintf("resuming run %s (%s, %s) on Temporal", info.ID, info.Flow, info.Status))
	// The events the ended execution kept stay delivered: their senders
	// were told so (docs/waits.md, On Temporal).
	kept, err := c.keptEvents(ctx, ref.Workflow, m.note)
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	ref.Base = len(earlier)
	run, err := c.start(ctx, snap, RunInput{Earlier: earlier, Attended: asker != nil, Events: kept})
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	ref.Execution = run.GetRunID()
	snap.Temporal = &ref
	if err := w.WriteSnapshot(snap); err != nil {
		_ = w.Close()
		return nil, err
	}
	m.ref, m.next = ref, 0
	return m.run(ctx)
}

// Resume continues the run in dir as flow resume does: a run directory
// that mirrors a Temporal run is re-attached to, or resumed there
// (Attach); any other run resumes in this process (local.Resume). It is
// how flow sweep --temporal --resume takes up a cell that was cut off.
func (c *Client) Resume(ctx context.Context, dir string, load flows.Options, cfg local.Config, opts engine.Options) (*engine.Result, error) {
	if snap, err := rundir.ReadSnapshot(dir); err == nil && snap.Temporal != nil {
		return c.Attach(ctx, dir, opts.OnEvent)
	}
	return local.Resume(ctx, dir, load, cfg, opts)
}

// Adopt mirrors into runsDir a run that a Temporal Schedule started (its
// workflow id is its run id): it makes the run directory from the
// snapshot the workflow was started with, then mirrors it as Execute does.
func (c *Client) Adopt(ctx context.Context, runsDir, id string, onEvent func(*record.Event), asker engine.Asker) (*engine.Result, error) {
	desc, err := c.Client.DescribeWorkflowExecution(ctx, id, "")
	if err != nil {
		return nil, fmt.Errorf("finding run %s on Temporal at %s: %w", id, c.Address, err)
	}
	info := desc.GetWorkflowExecutionInfo()
	execution := info.GetExecution().GetRunId()
	it := c.Client.GetWorkflowHistory(ctx, id, execution, false, enumspb.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	if !it.HasNext() {
		return nil, fmt.Errorf("run %s on Temporal has no history", id)
	}
	first, err := it.Next()
	if err == nil { // a run that continued as new is mirrored from its first execution
		execution, first, err = firstExecution(ctx, c.Client, id, execution, first)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the start of run %s: %w", id, err)
	}
	var in RunInput
	payloads := first.GetWorkflowExecutionStartedEventAttributes().GetInput()
	if err := c.converter(id).FromPayloads(payloads, &in); err != nil || in.Snapshot == nil {
		return nil, fmt.Errorf("run %s on Temporal was not started by flow (%v)", id, err)
	}
	snap := in.Snapshot
	snap.Run = id
	snap.Temporal = &TemporalRef{Address: c.Address, Namespace: c.Namespace, TaskQueue: info.GetTaskQueue(), Workflow: id, Execution: execution}
	w, err := rundir.Create(runsDir, id)
	if err != nil {
		return nil, err
	}
	if err := w.WriteSnapshot(snap); err != nil {
		_ = w.Close()
		return nil, err
	}
	m := &mirror{c: c, w: w, ref: *snap.Temporal, onEvent: onEvent, dir: w.Dir()}
	if in.Attended {
		m.relay = newRelay(asker)
		m.relay.of(m)
	}
	return m.run(ctx)
}

// onWorkers is the local.Config.Delegates of a run on Temporal: this
// process opens nothing, the workers serve the calls.
func onWorkers(string) (engine.Delegator, func()) { return nil, func() {} }
