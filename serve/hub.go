package serve

import (
	"sync"

	"github.com/flowrun/flow/engine/record"
)

// EventChanged is an event of the server's own, sent on its streams only
// (never in a run's events.jsonl): something the page shows changed — an
// ask appeared or was answered, a fire was made or skipped, a flow file
// reloaded. Run names the run it concerns, if one.
const EventChanged record.EventType = "serve.changed"

// hub hands every event of every served run to the streams that watch it.
// A stream that does not keep up loses events rather than slowing a run:
// the page renders again from the server's state on any event, and the
// run's events.jsonl has them all. Safe for concurrent use.
type hub struct {
	mu   sync.Mutex
	subs map[*stream]struct{}
}

// stream is one watcher: of one run, or of all (run "").
type stream struct {
	run string
	ch  chan *record.Event
}

func newHub() *hub { return &hub{subs: map[*stream]struct{}{}} }

// subscribe returns a stream of the events of run ("" for every run) and
// the function that ends it.
func (h *hub) subscribe(run string) (*stream, func()) {
	s := &stream{run: run, ch: make(chan *record.Event, 256)}
	h.mu.Lock()
	h.subs[s] = struct{}{}
	h.mu.Unlock()
	return s, func() {
		h.mu.Lock()
		delete(h.subs, s)
		h.mu.Unlock()
	}
}

// publish hands e to every stream that watches its run, without blocking.
func (h *hub) publish(e *record.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		if s.run != "" && s.run != e.Run {
			continue
		}
		select {
		case s.ch <- e:
		default: // the watcher is behind: it reads the state again on the next event
		}
	}
}
