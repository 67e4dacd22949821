package serve

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
)

// scheduler fires the schedules of the catalogue's flows on time, and
// applies each schedule's overlap. It reads the clock through time.Now and
// timers, so tests run it in a testing/synctest bubble. Safe for
// concurrent use.
type scheduler struct {
	s    *Server
	wake chan struct{} // the schedules changed: look again

	mu     sync.Mutex
	flows  map[string]*scheduled
	recent []Record // the last fires and skips, oldest first
}

// scheduled is one flow's schedule and its next fire.
type scheduled struct {
	sched   *flows.Schedule
	next    time.Time // zero: never again
	pending time.Time // overlap: queue: the fire that waits for the flow's run to end
}

func newScheduler(s *Server, recent []Record) *scheduler {
	return &scheduler{s: s, wake: make(chan struct{}, 1), flows: map[string]*scheduled{}, recent: recent}
}

// update takes the schedules of the catalogue as it is now. A schedule
// that did not change keeps its next fire; a new or changed one fires
// next after now.
func (sc *scheduler) update(entries []*entry, now time.Time) {
	sc.mu.Lock()
	seen := map[string]bool{}
	for _, e := range entries {
		if e.Broken() || e.Plan.Root.Schedule == nil {
			continue
		}
		seen[e.Name] = true
		sched := e.Plan.Root.Schedule
		old := sc.flows[e.Name]
		if old != nil && old.sched.Cron == sched.Cron && old.sched.Location.String() == sched.Location.String() {
			old.sched = sched
			continue
		}
		sc.flows[e.Name] = &scheduled{sched: sched, next: sched.Next(now)}
	}
	for name := range sc.flows {
		if !seen[name] {
			delete(sc.flows, name)
		}
	}
	sc.mu.Unlock()
	select {
	case sc.wake <- struct{}{}:
	default:
	}
}

// next returns a flow's next fire, or the zero time.
func (sc *scheduler) next(flow string) time.Time {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if f := sc.flows[flow]; f != nil {
		return f.next
	}
	return time.Time{}
}

// recentFires returns the last fires and skips, newest first; of one
// flow if flow is set.
func (sc *scheduler) recentFires(flow string) []Record {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	var out []Record
	for i := len(sc.recent) - 1; i >= 0; i-- {
		if flow == "" || sc.recent[i].Flow == flow {
			out = append(out, sc.recent[i])
		}
	}
	return out
}

// loop fires schedules until ctx ends.
func (sc *scheduler) loop(ctx context.Context) {
	for {
		sc.mu.Lock()
		var first time.Time
		for _, f := range sc.flows {
			if !f.next.IsZero() && (first.IsZero() || f.next.Before(first)) {
				first = f.next
			}
		}
		sc.mu.Unlock()
		var fire <-chan time.Time
		var t *time.Timer
		if !first.IsZero() {
			t = time.NewTimer(time.Until(first))
			fire = t.C
		}
		select {
		case <-ctx.Done():
		case <-sc.wake:
		case now := <-fire:
			sc.fireDue(now)
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// fireDue fires every schedule due at now. Fires a schedule missed while
// the machine slept are not made up: the next fire is after now.
func (sc *scheduler) fireDue(now time.Time) {
	type due struct {
		flow string
		at   time.Time
	}
	var fires []due
	sc.mu.Lock()
	for name, f := range sc.flows {
		if !f.next.IsZero() && !f.next.After(now) {
			fires = append(fires, due{name, f.next})
			f.next = f.sched.Next(now)
		}
	}
	sc.mu.Unlock()
	slices.SortFunc(fires, func(a, b due) int { return a.at.Compare(b.at) })
	for _, d := range fires {
		sc.fire(d.flow, d.at, TriggerSchedule)
	}
}

// catchup fires once each schedule with catchup: once that missed a fire
// between the last fire a server recorded and now.
func (sc *scheduler) catchup(lastFire map[string]time.Time, now time.Time) {
	sc.mu.Lock()
	var missed []string
	for name, f := range sc.flows {
		last, ok := lastFire[name]
		if !ok || f.sched.Catchup != flows.CatchupOnce {
			continue
		}
		if n := f.sched.Next(last); !n.IsZero() && n.Before(now) {
			missed = append(missed, name)
		}
	}
	sc.mu.Unlock()
	slices.Sort(missed)
	for _, name := range missed {
		sc.fire(name, now, TriggerCatchup)
	}
}

// fire makes one fire of flow, due at at: a run, a queued fire or a
// recorded skip, by the schedule's overlap.
func (sc *scheduler) fire(flow string, at time.Time, trigger string) {
	e := sc.s.catalog.get(flow)
	if e == nil || e.Broken() || e.Plan.Root.Schedule == nil {
		sc.skip(flow, at, "the flow file does not load")
		return
	}
	sched := e.Plan.Root.Schedule
	if sched.Overlap != flows.OverlapAllow && sc.s.runs.busy(flow) {
		if sched.Overlap == flows.OverlapQueue {
			sc.mu.Lock()
			f := sc.flows[flow]
			queued := f != nil && f.pending.IsZero()
			if queued {
				f.pending = at
			}
			sc.mu.Unlock()
			if queued {
				sc.s.metrics.fires.WithLabelValues(flow, "queued").Inc()
				sc.note(Record{Type: RecordFire, Flow: flow, At: at, Trigger: trigger, Reason: "queued until the running run ends"})
				return
			}
			sc.skip(flow, at, "a run is going and a fire waits for it already (overlap: queue)")
			return
		}
		sc.skip(flow, at, "the last run has not ended (overlap: skip)")
		return
	}
	sc.start(e, at, trigger)
}

func (sc *scheduler) start(e *entry, at time.Time, trigger string) {
	id := rundir.NewRunID(time.Now())
	sched := e.Plan.Root.Schedule
	status, err := sc.s.runs.submit(&job{id: id, flow: e.Name, trigger: trigger, plan: e.Plan, input: sched.Input})
	if err != nil {
		sc.skip(e.Name, at, err.Error())
		return
	}
	sc.s.metrics.fires.WithLabelValues(e.Name, "started").Inc()
	sc.note(Record{Type: RecordFire, Flow: e.Name, Run: id, At: at, Trigger: trigger, Reason: status})
}

func (sc *scheduler) skip(flow string, at time.Time, why string) {
	sc.s.metrics.fires.WithLabelValues(flow, "skipped").Inc()
	sc.s.log.Info("fire skipped", "flow", flow, "due", at.Format(time.RFC3339), "why", why)
	sc.note(Record{Type: RecordSkip, Flow: flow, At: at, Reason: why})
}

// note records a fire or skip in serve.jsonl and for the page.
func (sc *scheduler) note(r Record) {
	r.Time = time.Now()
	sc.s.record(r)
	sc.mu.Lock()
	sc.recent = append(sc.recent, r)
	if n := len(sc.recent); n > recentFires {
		sc.recent = slices.Delete(sc.recent, 0, n-recentFires)
	}
	sc.mu.Unlock()
	sc.s.changed("")
}

// runEnded starts the fire that waits for flow's run (overlap: queue).
func (sc *scheduler) runEnded(flow string) {
	sc.mu.Lock()
	f := sc.flows[flow]
	var at time.Time
	if f != nil && !f.pending.IsZero() && !sc.s.runs.busy(flow) {
		at, f.pending = f.pending, time.Time{}
	}
	sc.mu.Unlock()
	if at.IsZero() {
		return
	}
	if e := sc.s.catalog.get(flow); e != nil && !e.Broken() {
		sc.start(e, at, TriggerSchedule)
	}
}
