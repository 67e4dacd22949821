package temporal

import (
	"context"
	"errors"

	"fmt"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/converter"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
)

// mirror copies a run workflow's facts into a local run directory as they
// come, derives the events a local run would give (visit start and end
// from the facts, progress from the activities' heartbeats), and writes
// output.json, usage.json and report.html at the end. It holds the run
// directory's lock while it mirrors, so the run reads as running.
type mirror struct {
	c       *Client
	w       *rundir.Writer
	ref     rundir.TemporalRun
	onEvent func(*record.Event)
	dir     string
	next    int                 // facts of the current execution mirrored so far
	live    map[string]Progress // the last progress shown per visit
	waiting bool                // said that no worker took the run yet
	said    map[string]bool     // the troubles noted
	// relay hands the run's asks to a local Asker (an attended run); nil:
	// nobody here answers.
	relay *relay
	holds holds // what the run holds now, for Client.LetGoWhileWaiting
}

// ErrDetached, as the cause of a mirror's cancellation, ends the mirror
// and leaves the run going on Temporal (flow serve --temporal shutting
// down); any other cause stops the run.
var ErrDetached = errors.New("detached from the run; it goes on on Temporal")

// run mirrors until the workflow closes, then finishes the run directory
// and closes the Writer.
func (m *mirror) run(ctx context.Context) (res *engine.Result, err error) {
	defer func() {
		if cerr := m.w.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("closing run directory: %w", cerr)
		}
	}()
	m.live = map[string]Progress{}
	if m.holds == nil {
		m.holds = newHolds(nil)
	}
	if m.relay != nil {
		defer m.relay.close()
	}
	poll := m.c.Poll
	if poll <= 0 {
		poll = 250 * time.Millisecond
	}
	// Once ctx ends (Ctrl-C), the workflow is cancelled and the mirror
	// goes on until the workflow has stopped the run.
	rpc := context.WithoutCancel(ctx)
	// The history's long poll says when facts may have come; the ticker
	// only paces the progress of activities in flight (their heartbeats
	// are no events) and the note that no worker took the run yet.
	hist := watch(rpc, m.c.Client, m.c.converter(m.ref.Workflow), m.namespace(), m.ref.Workflow, m.ref.Execution)
	defer func() { hist.stop() }()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	cancelled, stale, ticked := false, true, true
	var pulled time.Time
	for {
		if errors.Is(context.Cause(ctx), ErrDetached) {
			m.note(fmt.Sprintf("detached from run %s; it goes on on Temporal (flow resume %s re-attaches)", m.ref.Workflow, m.ref.Workflow))
			return nil, context.Cause(ctx)
		}
		if ctx.Err() != nil && !cancelled {
			cancelled = true
			if err := m.c.Client.CancelWorkflow(rpc, m.ref.Workflow, m.ref.Execution); err != nil {
				return nil, fmt.Errorf("stopping run %s on Temporal: %w", m.ref.Workflow, err)
			}
			m.note("stopping the run on Temporal")
		}
		for _, t := range hist.troubles() {
			m.trouble(t)
		}
		pending, closed, next := hist.state()
		if closed && next != "" {
			if err := m.follow(rpc, next); err != nil {
				return nil, err
			}
			hist.stop()
			hist = watch(rpc, m.c.Client, m.c.converter(m.ref.Workflow), m.namespace(), m.ref.Workflow, m.ref.Execution)
			continue
		}
		if closed {
			return m.finish(rpc)
		}
		if stale && time.Since(pulled) >= pullGap {
			// A query fails until a worker took the workflow's first
			// task: it is asked again on the next tick.
			stale, pulled = m.pull(rpc) != nil, time.Now()
		}
		if m.relay != nil && !cancelled && ticked {
			// An ask that waits is the workflow's, asked by query.
			m.relay.sync(ctx)
		}
		if m.c.LetGoWhileWaiting && !cancelled && ticked && m.mayLetGo(rpc, time.Now()) {
			m.note(fmt.Sprintf("run %s holds nothing but its waits: let go until one may end; it goes on on Temporal", m.ref.Workflow))
			return nil, ErrLetGoWaiting
		}
		if ticked && (pending > 0 || m.next == 0) {
			desc, err := m.c.Client.DescribeWorkflowExecution(rpc, m.ref.Workflow, m.ref.Execution)
			if err != nil {
				return nil, fmt.Errorf("watching run %s on Temporal at %s: %w", m.ref.Workflow, m.c.Address, err)
			}
			m.progress(desc.GetPendingActivities())
			if pending := desc.GetPendingWorkflowTask(); m.next == 0 && !m.waiting && pending != nil &&
				pending.GetState() == enumspb.PENDING_WORKFLOW_TASK_STATE_SCHEDULED && time.Since(pending.GetScheduledTime().AsTime()) > 3*time.Second {
				m.waiting = true
				m.note(fmt.Sprintf("waiting for a worker on task queue %s (start one: flow worker --temporal %s)", m.ref.TaskQueue, m.c.Address))
			}
		}
		var done <-chan struct{}
		if !cancelled {
			done = ctx.Done()
		}
		var wake <-chan time.Time
		if stale {
			wake = time.After(pullGap - time.Since(pulled))
		}
		ticked = false
		select {
		case <-hist.changed:
			stale = true
		case <-wake:
		case <-tick.C:
			ticked = true
		case <-done:
		}
	}
}

// namespace is the run's, as its snapshot records it.
func (m *mirror) namespace() string {
	if m.ref.Namespace != "" {
		return m.ref.Namespace
	}
	if m.c.Namespace != "" {
		return m.c.Namespace
	}
	return "default"
}

// pullClosed appends the last facts of a closed execution, which a
// worker reads by replaying it: it is given ten seconds to take the query.
func (m *mirror) pullClosed(ctx context.Context) error {
	var err error
	for range 40 {
		if err = m.pull(ctx); err == nil {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return err
}

// pullGap is the least time between two facts queries: a burst of events
// (a visit is about six) costs one query, and the live view lags the run
// by at most this.
const pullGap = 100 * time.Millisecond

// pull appends the facts the journal lacks.
func (m *mirror) pull(ctx context.Context) error {
	for {
		v, err := m.query(ctx, m.next)
		if err != nil {
			return err
		}
		var page FactsPage
		if err := v.Get(&page); err != nil {
			return fmt.Errorf("reading the facts of run %s: %w", m.ref.Workflow, err)
		}
		for _, f := range page.Facts {
			if err := m.w.Fact(f); err != nil {
				return err
			}
			m.next++
			m.factEvent(f)
		}
		if len(page.Facts) == 0 || m.next >= page.Total {
			return nil
		}
	}
}

// query asks the workflow for its facts from from on. A query is
// answered by a worker: without one it would wait, so it is bounded.
func (m *mirror) query(ctx context.Context, from int) (converter.EncodedValue, error) {
	ctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	return m.c.Client.QueryWorkflow(ctx, m.ref.Workflow, m.ref.Execution, QueryFacts, from)
}

// queryTimeout bounds one facts query.
const queryTimeout = 5 * time.Second

// total is how many facts the workflow holds.
func (m *mirror) total(ctx context.Context) (int, error) {
	v, err := m.query(ctx, 1<<30)
	if err != nil {
		return 0, fmt.Errorf("reading the facts of run %s on Temporal (is a worker running? a closed workflow is read by replaying it on one): %w", m.ref.Workflow, err)
	}
	var page FactsPage
	if err := v.Get(&page); err != nil {
		return 0, err
	}
	return page.Total, nil
}

// finish mirrors the last facts of a closed workflow and writes what a
// run leaves when it ends.
func (m *mirror) finish(ctx context.Context) (*engine.Result, error) {
	var out RunOutput
	if err := m.c.Client.GetWorkflow(ctx, m.ref.Workflow, m.ref.Execution).Get(ctx, &out); err != nil {
		return nil, fmt.Errorf("run %s on Temporal: %w", m.ref.Workflow, err)
	}
	if err := out.unpack(); err != nil {
		return nil, fmt.Errorf("run %s on Temporal: reading its result: %w", m.ref.Workflow, err)
	}
	if err := m.pullClosed(ctx); err != nil {
		return nil, fmt.Errorf("reading the last facts of run %s (flow resume %s reads them later): %w", m.ref.Workflow, m.ref.Workflow, err)
	}
	if out.Values != nil {
		if err := m.w.WriteValues(out.Values); err != nil {
			m.note("the run's node values (values.json) are not recorded: " + err.Error())
		}
	}
	res := &engine.Result{RunID: m.ref.Workflow, Dir: m.dir, OK: out.OK, Output: out.Output, Failure: out.Failure, Usage: out.Usage, Overspend: out.Overspend}
	m.emit(&record.Event{Type: record.EventRunEnd, Status: out.Status, OK: &res.OK, Error: out.Failure, Usage: &res.Usage, Dir: m.dir, Overspend: res.Overspend})
	return res, m.w.Finish(out.Output)
}

// factEvent emits the event a local run gives with a fact.
func (m *mirror) factEvent(f *record.Fact) {
	m.holds.add(f)
	switch f.Type {
	case record.FactRun:
		if f.Status == record.StatusRunning {
			m.emit(&record.Event{Time: f.Time, Type: record.EventRunStart, Dir: m.dir})
		}
	case record.FactStart:
		m.emit(&record.Event{Time: f.Time, Type: record.EventVisitStart, Visit: f.Visit, Node: f.Node, Kind: f.Kind})
	case record.FactWaiting:
		// The workflow holds the wait (waits.go): the live view says so.
		m.emit(&record.Event{Time: f.Time, Type: record.EventVisitWaiting, Visit: f.Visit, Node: f.Node, Kind: f.Kind, Wait: f.Wait})
	case record.FactEnd:
		delete(m.live, f.Visit)
		m.emit(&record.Event{Time: f.Time, Type: record.EventVisitEnd, Visit: f.Visit, Node: f.Node, Kind: f.Kind, Agent: f.Agent,
			OK: f.OK, Error: f.Error, Usage: f.Usage, Model: f.Model, WallMS: f.WallMS})
	}
}

// progress emits the progress of running visits, read off their
// activities' last heartbeats.
func (m *mirror) progress(pending []*PendingActivity) {
	dc := m.c.converter(m.ref.Workflow)
	for _, a := range pending {
		if t, same := attemptTrouble(a); t != "" {
			m.troubleOnce(same, t)
		}
		details := a.GetHeartbeatDetails()
		if details == nil {
			continue
		}
		var p Progress
		if err := dc.FromPayloads(details, &p); err != nil || p.Visit == "" {
			continue
		}
		last, seen := m.live[p.Visit]
		if seen && last == p {
			continue
		}
		if !seen && p.Home != "" {
			// Where the visit runs, for flow tail while it does.
			_ = rundir.WriteRemoteHome(m.dir, p.Visit, rundir.RemoteHome{Worker: p.Worker, Home: p.Home})
		}
		m.live[p.Visit] = p
		m.emit(&record.Event{Type: record.EventProgress, Visit: p.Visit, Driver: p.Driver, Model: p.Model, Activity: p.Activity, Tokens: p.Tokens})
	}
}

// trouble notes what holds the run up (TroubleNote), once each.
func (m *mirror) trouble(msg string) { m.troubleOnce(msg, msg) }

// troubleOnce notes msg unless a trouble the same as same was noted.
func (m *mirror) troubleOnce(same, msg string) {
	if m.said == nil {
		m.said = map[string]bool{}
	}
	if !m.said[same] {
		m.said[same] = true
		m.note(msg)
	}
}

func (m *mirror) note(msg string) { m.emit(&record.Event{Type: record.EventNote, Message: msg}) }

func (m *mirror) emit(e *record.Event) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Run = m.ref.Workflow
	_ = m.w.Event(e)
	if m.onEvent != nil {
		m.onEvent(e)
	}
}
