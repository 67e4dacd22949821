package serve

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/runner"
)

// TriggerWake is a run that waited, resumed by the server once its wait's
// time or event came (docs/waits.md).
const TriggerWake = "wake"

// waker wakes the waiting runs of the runs directory at their time or on
// their event (docs/waits.md): it holds, per waiting run, its directory,
// its earliest end and the events it waits for, and no goroutine or
// process of the run's. It learns them at start (scan: also what a
// flow run outside the server left waiting, and runs an earlier server
// left), when a run it runs ends waiting, and from deliveries.
type waker struct {
	s     *Server
	gauge prometheus.Gauge
	kick  chan struct{}

	mu      sync.Mutex
	waiting map[string]*waitingRun
}

// waitingRun is what the waker keeps of one waiting run.
type waitingRun struct {
	id, flow, dir string
	due           time.Time // the earliest until of its waits; zero: none
	events        []string  // the events its waits wait for
}

func newWaker(s *Server) *waker {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "flow_runs_waiting", Help: "Runs that wait (a wait: node), holding no process, for the server to wake them."})
	s.metrics.reg.MustRegister(g)
	return &waker{s: s, gauge: g, kick: make(chan struct{}, 1), waiting: map[string]*waitingRun{}}
}

// scan learns every waiting run of the runs directory.
func (wk *waker) scan() {
	runs, err := rundir.List(wk.s.cfg.RunsDir)
	if err != nil {
		wk.s.log.Error("listing waiting runs", "err", err)
		return
	}
	for _, info := range runs {
		wk.note(info)
	}
}

// noteDir learns how the run in dir is now.
func (wk *waker) noteDir(id string) {
	dir, ok := rundir.Find(wk.s.cfg.RunsDir, id)
	if !ok {
		return
	}
	if info, err := rundir.Inspect(dir); err == nil {
		wk.note(info)
	}
}

// note keeps info's run when it waits, and forgets it when it does not.
// A run on Temporal that nobody follows and whose journal ends in waits
// (rundir.RunInfo.Waiting; let go while it waits, or its follower died)
// waits too: its workflow holds the waits, and it is followed again when
// one may end.
func (wk *waker) note(info *rundir.RunInfo) {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	defer wk.poke()
	if info.Status != rundir.StatusWaiting && (info.Status != record.StatusInterrupted || len(info.Waiting) == 0) {
		delete(wk.waiting, info.ID)
		wk.gauge.Set(float64(len(wk.waiting)))
		return
	}
	w := &waitingRun{id: info.ID, flow: info.Flow, dir: info.Dir}
	for _, on := range info.Waiting {
		if on.Until != nil && (w.due.IsZero() || on.Until.Before(w.due)) {
			w.due = *on.Until
		}
		if on.Event != "" {
			w.events = append(w.events, on.Event)
		}
	}
	wk.waiting[info.ID] = w
	wk.gauge.Set(float64(len(wk.waiting)))
}

// forget stops holding run id as waiting.
func (wk *waker) forget(id string) {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	delete(wk.waiting, id)
	wk.gauge.Set(float64(len(wk.waiting)))
}

// has says whether the waker holds run id as waiting.
func (wk *waker) has(id string) bool {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	_, ok := wk.waiting[id]
	return ok
}

// poke makes the loop look again now.
func (wk *waker) poke() {
	select {
	case wk.kick <- struct{}{}:
	default:
	}
}

// loop wakes each waiting run whose time came or whose event was
// delivered (also by flow signal, which the server hears of by looking
// every Poll), until ctx ends.
func (wk *waker) loop(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	lastLook := time.Time{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-wk.kick:
		}
		now := time.Now()
		look := now.Sub(lastLook) >= wk.s.cfg.Poll
		if look {
			lastLook = now
		}
		wait := wk.next(now)
		for _, w := range wk.due(now, look) {
			if !wk.wake(w) {
				wait = 100 * time.Millisecond // a full queue: again in a moment
				break
			}
		}
		t.Reset(wait)
	}
}

// due are the runs to wake now, earliest first: their time came, or
// (when look says so) one of their events is in their directory. They
// stay in the set until wake takes them off.
func (wk *waker) due(now time.Time, look bool) []*waitingRun {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	var out []*waitingRun
	for _, w := range wk.waiting {
		ready := !w.due.IsZero() && !now.Before(w.due)
		if !ready && look {
			ready = slices.ContainsFunc(w.events, func(e string) bool { s, _ := rundir.Delivered(w.dir, e); return s != nil })
			if ready {
				w.due = now
			}
		}
		if ready {
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b *waitingRun) int { return a.due.Compare(b.due) })
	return out
}

// next is how long until the loop must look again: the earliest due
// time, and at most Poll.
func (wk *waker) next(now time.Time) time.Duration {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	d := wk.s.cfg.Poll
	for _, w := range wk.waiting {
		if !w.due.IsZero() && w.due.Sub(now) < d {
			d = max(w.due.Sub(now), time.Millisecond)
		}
	}
	return d
}

// wake resumes w (flow resume's meaning): it goes on from its wait, or
// waits again and is noted again when it ends. It says false when the
// run queue is full: w stays waiting, and the loop tries again.
func (wk *waker) wake(w *waitingRun) bool {
	if a, j := wk.s.runs.get(w.id); a == nil && j == nil {
		_, err := wk.s.runs.submit(&job{id: w.id, flow: w.flow, trigger: TriggerWake, resumeDir: w.dir})
		switch {
		case errors.Is(err, ErrQueueFull):
			return false
		case err != nil:
			wk.s.log.Error("waking", "run", w.id, "err", err)
		default:
			wk.s.log.Info("woke a waiting run", "run", w.id, "flow", w.flow)
		}
	}
	wk.mu.Lock()
	if wk.waiting[w.id] == w {
		delete(wk.waiting, w.id)
	}
	wk.gauge.Set(float64(len(wk.waiting)))
	wk.mu.Unlock()
	return true
}

// wakeOn wakes run id now if it waits for event.
func (wk *waker) wakeOn(id, event string) {
	wk.mu.Lock()
	defer wk.mu.Unlock()
	if w := wk.waiting[id]; w != nil && slices.Contains(w.events, event) {
		w.due = time.Now()
		wk.poke()
	}
}

// apiEvent delivers event {name} to run {id}: the body is its JSON data
// (empty: null). The same data again is taken (200), other data refused
// (409); a run that waits on it is woken.
func (s *Server) apiEvent(w http.ResponseWriter, r *http.Request) {
	id, dir, ok := s.runDir(w, r)
	if !ok {
		return
	}
	s.deliver(w, r, id, dir, who(r))
}

// hookEvent is the webhook of one wait: POST /hooks/runs/{id}/events/{name}/{token},
// taken without an API token since its own unguessable token is in its
// path (rundir.WebhookToken); a wrong one is a 404, as for no such hook.
func (s *Server) hookEvent(w http.ResponseWriter, r *http.Request) {
	id, name := r.PathValue("id"), r.PathValue("name")
	dir, found := "", false
	if runIDRE().MatchString(id) {
		dir, found = rundir.Find(s.cfg.RunsDir, id)
	}
	if !found || !rundir.WebhookTokenOK(dir, name, r.PathValue("token")) {
		fail(w, http.StatusNotFound, "", "no such webhook")
		return
	}
	s.deliver(w, r, id, dir, "webhook")
}

func (s *Server) deliver(w http.ResponseWriter, r *http.Request, id, dir, by string) {
	name := r.PathValue("name")
	if dir == "" {
		fail(w, http.StatusConflict, "id", "run %s has no directory yet; deliver the event once it started", id)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		fail(w, http.StatusRequestEntityTooLarge, "data", "reading the body (at most %d bytes): %v", maxBody, err)
		return
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("null")
	}
	// A run on Temporal takes it as a signal (docs/waits.md, On Temporal).
	already, err := runner.Deliver(r.Context(), s.cfg.Backend, dir, name, body, by)
	switch {
	case errors.Is(err, rundir.ErrSignalConflict):
		fail(w, http.StatusConflict, "name", "%v", err)
		return
	case errors.Is(err, runner.ErrUnconfirmed):
		s.log.Warn("event signalled, not confirmed", "run", id, "event", name, "err", err)
		writeJSON(w, http.StatusAccepted, map[string]any{"run": id, "event": name, "delivered": true, "already": false, "confirmed": false})
		return
	case err != nil:
		fail(w, http.StatusBadRequest, "name", "%v", err)
		return
	}
	s.log.Info("event delivered", "run", id, "event", name, "by", by, "again", already)
	s.waker.wakeOn(id, name)
	writeJSON(w, http.StatusOK, map[string]any{"run": id, "event": name, "delivered": !already, "already": already})
}

// WaitView is one wait a waiting run waits on, as the page and the API
// show it: what for, since and until when, and, for an event, the
// webhook that delivers it (shown to token holders only: the page and
// the API are theirs).
type WaitView struct {
	Visit   string    `json:"visit"`
	Event   string    `json:"event,omitempty"`
	Since   time.Time `json:"since"`
	Until   time.Time `json:"until,omitzero"`
	Webhook string    `json:"webhook,omitempty"`
}

// What says what the wait is for: "event NAME" or "time".
func (v WaitView) What() string {
	if v.Event != "" {
		return "event " + v.Event
	}
	return "time"
}

// waitViews are info's waits, each event's with its webhook.
func (s *Server) waitViews(info *rundir.RunInfo) []WaitView {
	var out []WaitView
	for _, on := range info.Waiting {
		v := WaitView{Visit: on.Visit, Event: on.Event, Since: on.Since}
		if on.Until != nil {
			v.Until = *on.Until
		}
		if on.Event != "" {
			if tok, err := rundir.WebhookToken(info.Dir, on.Event); err == nil {
				v.Webhook = "http://" + s.Addr() + "/hooks/runs/" + info.ID + "/events/" + on.Event + "/" + tok
			}
		}
		out = append(out, v)
	}
	return out
}
