package serve

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/sourcegraph/conc"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/runner"
)

// Triggers: why a served run started.
const (
	TriggerSchedule = "schedule" // its schedule fired
	TriggerCatchup  = "catchup"  // a fire missed while no server ran (catchup: once)
	TriggerAPI      = "api"      // POST /api/flows/{name}/runs, or the page
	TriggerResume   = "resume"   // POST /api/runs/{id}/resume, or a server resuming what the last one left
)

// job is a run to start: a new run of a plan, or the resume of a run
// directory.
type job struct {
	id, flow, trigger string
	plan              *flows.Plan // a new run
	input             any
	resumeDir         string // a resume
	adopt             bool   // a run a Temporal Schedule started: mirror it
	queued            time.Time
}

// LiveVisit is a visit running now, as the page shows it.
type LiveVisit struct {
	Visit    string    `json:"visit"`
	Kind     string    `json:"kind"`
	Driver   string    `json:"driver,omitempty"`
	Model    string    `json:"model,omitempty"`
	Activity string    `json:"activity,omitempty"`
	Tokens   int64     `json:"tokens,omitempty"`
	Started  time.Time `json:"started"`
}

// active is a run this server is running.
type active struct {
	job
	started time.Time
	cancel  context.CancelCauseFunc
	done    chan struct{} // closed when the engine returned and the run left the active set

	mu     sync.Mutex
	visits map[string]*LiveVisit
	stopBy string // "api" or "shutdown": who stopped it
}

func (a *active) liveVisits() []LiveVisit {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]LiveVisit, 0, len(a.visits))
	for _, v := range a.visits {
		out = append(out, *v)
	}
	slices.SortFunc(out, func(x, y LiveVisit) int { return x.Started.Compare(y.Started) })
	return out
}

// track keeps the run's live visits from its events.
func (a *active) track(e *record.Event) {
	a.mu.Lock()
	defer a.mu.Unlock()
	switch e.Type {
	case record.EventVisitStart:
		a.visits[e.Visit] = &LiveVisit{Visit: e.Visit, Kind: string(e.Kind), Started: e.Time}
	case record.EventProgress:
		if v := a.visits[e.Visit]; v != nil {
			v.Driver, v.Model, v.Activity = e.Driver, e.Model, e.Activity
			if e.Tokens > 0 {
				v.Tokens = e.Tokens
			}
		}
	case record.EventVisitEnd:
		delete(a.visits, e.Visit)
	}
}

// runs starts runs under the server-wide cap and queues the rest, first
// come first served. Safe for concurrent use.
type runs struct {
	s   *Server
	ctx context.Context // every run's parent; runs are stopped one by one, with a cause
	max int
	// maxQueued caps the queue: a run past it is refused (ErrQueueFull).
	maxQueued int
	wg        conc.WaitGroup

	mu     sync.Mutex
	active map[string]*active
	queue  []*job
	closed bool
}

// errClosed refuses new runs once the server shuts down.
var errClosed = errors.New("the server is shutting down")

// ErrQueueFull refuses a run when as many wait for a slot as the queue
// holds (--max-queued).
var ErrQueueFull = errors.New("the run queue is full")

// submit starts j now, or queues it if the cap is reached. It says which.
func (r *runs) submit(j *job) (status string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return "", errClosed
	}
	j.queued = time.Now()
	if len(r.active) < r.max {
		r.startLocked(j)
		return string(record.StatusRunning), nil
	}
	if r.maxQueued > 0 && len(r.queue) >= r.maxQueued {
		r.s.log.Warn("run refused: the queue is full", "flow", j.flow, "trigger", j.trigger, "running", len(r.active), "queued", len(r.queue))
		return "", fmt.Errorf("%w: %d runs are running and %d wait (--max-runs %d, --max-queued %d); try again once some have ended", ErrQueueFull, len(r.active), len(r.queue), r.max, r.maxQueued)
	}
	r.queue = append(r.queue, j)
	r.s.metrics.queued.Set(float64(len(r.queue)))
	r.s.changed(j.id)
	return statusQueued, nil
}

// statusQueued is the status of a run waiting for a slot; it has no run
// directory yet.
const statusQueued = "queued"

func (r *runs) startLocked(j *job) {
	ctx, cancel := context.WithCancelCause(r.ctx)
	a := &active{job: *j, started: time.Now(), cancel: cancel, done: make(chan struct{}), visits: map[string]*LiveVisit{}}
	r.active[j.id] = a
	r.s.metrics.running.Set(float64(len(r.active)))
	r.wg.Go(func() {
		defer cancel(nil)
		r.execute(ctx, a)
		r.finished(a)
		close(a.done) // after finished: a stopped run is off the active set when stop returns
	})
}

// execute runs one job through the engine, into the runs directory.
func (r *runs) execute(ctx context.Context, a *active) {
	s := r.s
	opts := s.cfg.Engine
	opts.RunID = a.id
	opts.Asker = &asker{asks: s.asks, run: a.id, flow: a.flow}
	opts.OnEvent = func(e *record.Event) {
		a.track(e)
		s.metrics.event(e)
		s.hub.publish(e)
		if prev := s.cfg.Engine.OnEvent; prev != nil {
			prev(e)
		}
	}
	s.record(Record{Type: RecordRun, Flow: a.flow, Run: a.id, Trigger: a.trigger})
	res, err := r.start(ctx, a, opts)
	switch {
	case errors.Is(err, runner.ErrLetGoWaiting):
		// It goes on on Temporal when its time or event comes; the waker
		// follows it again then (docs/waits.md, On Temporal).
		s.log.Info("let go of a run on Temporal while it waits", "flow", a.flow, "run", a.id)
		s.waker.noteDir(a.id)
		return
	case errors.Is(err, runner.ErrDetached):
		s.log.Info("detached from a run on Temporal; it goes on", "flow", a.flow, "run", a.id)
		return
	case res == nil:
		s.log.Error("run did not start", "flow", a.flow, "run", a.id, "err", err)
		s.problem(fmt.Sprintf("run %s of %s did not start: %v", a.id, a.flow, err))
		s.metrics.runs.WithLabelValues(a.flow, "refused").Inc()
		return
	case err != nil:
		s.log.Warn("run ended with an error", "flow", a.flow, "run", a.id, "err", err)
	}
	status := res.Status()
	s.metrics.runs.WithLabelValues(a.flow, string(status)).Inc()
	s.log.Info("run ended", "flow", a.flow, "run", a.id, "status", status)
	a.mu.Lock()
	stopBy := a.stopBy
	a.mu.Unlock()
	if status == record.StatusStopped && stopBy == "shutdown" {
		s.record(Record{Type: RecordShutdown, Flow: a.flow, Run: a.id})
	}
	// A run that ends waiting is woken later; one that does not is
	// forgotten, also when the waker had it from an earlier wait.
	s.waker.noteDir(a.id)
}

// finished takes an ended run off the active set, starts the next queued
// one, and tells the scheduler (overlap: queue waits on it).
func (r *runs) finished(a *active) {
	r.mu.Lock()
	delete(r.active, a.id)
	if !r.closed && len(r.queue) > 0 && len(r.active) < r.max {
		next := r.queue[0]
		r.queue = r.queue[1:]
		r.startLocked(next)
	}
	r.s.metrics.queued.Set(float64(len(r.queue)))
	r.s.metrics.running.Set(float64(len(r.active)))
	r.mu.Unlock()
	r.s.changed(a.id)
	r.s.sched.runEnded(a.flow)
}

// busy reports whether flow has a run running or queued.
func (r *runs) busy(flow string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, a := range r.active {
		if a.flow == flow {
			return true
		}
	}
	return slices.ContainsFunc(r.queue, func(j *job) bool { return j.flow == flow })
}

// get returns the active run id, or the queued job id.
func (r *runs) get(id string) (*active, *job) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if a := r.active[id]; a != nil {
		return a, nil
	}
	for _, j := range r.queue {
		if j.id == id {
			return nil, j
		}
	}
	return nil, nil
}

// snapshot returns the active runs (oldest first) and the queue.
func (r *runs) snapshot() ([]*active, []*job) {
	r.mu.Lock()
	defer r.mu.Unlock()
	as := slices.Collect(maps.Values(r.active))
	slices.SortFunc(as, func(x, y *active) int { return x.started.Compare(y.started) })
	return as, slices.Clone(r.queue)
}

// stop stops a running run as Ctrl-C does (its visits end `stopped`, it
// stays resumable) and waits for it to end, at most wait; a queued run is
// taken off the queue. by says who: "api" or "shutdown".
func (r *runs) stop(ctx context.Context, id, by string, wait time.Duration) (found bool) {
	r.mu.Lock()
	a := r.active[id]
	if a == nil {
		i := slices.IndexFunc(r.queue, func(j *job) bool { return j.id == id })
		if i >= 0 {
			r.queue = slices.Delete(r.queue, i, i+1)
			r.s.metrics.queued.Set(float64(len(r.queue)))
		}
		r.mu.Unlock()
		return i >= 0
	}
	r.mu.Unlock()
	a.mu.Lock()
	a.stopBy = by
	a.mu.Unlock()
	r.s.cfg.Backend.Stop(a.cancel, runner.StopRun)
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-a.done:
	case <-t.C:
	case <-ctx.Done():
	}
	return true
}

// shutdown refuses new runs, drops the queue, stops every running run and
// waits for all of them: when it returns no run of this server is left,
// nor any process one started (local.Execute ends them).
func (r *runs) shutdown() {
	r.mu.Lock()
	r.closed = true
	r.queue = nil
	as := slices.Collect(maps.Values(r.active))
	r.mu.Unlock()
	for _, a := range as {
		a.mu.Lock()
		a.stopBy = "shutdown"
		a.mu.Unlock()
		r.s.cfg.Backend.Stop(a.cancel, runner.LetGo)
	}
	r.wg.Wait()
}
