package enginetest

import (
	"context"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
)

// Deliver delivers an event to the run, at the fake clock's now: the
// waits for it are satisfied from then on (Await).
func (h *Host) Deliver(event string, data []byte, by string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.delivered == nil {
		h.delivered = map[string]*engine.Delivery{}
	}
	h.delivered[event] = &engine.Delivery{Data: data, By: by, Time: h.now}
}

// Advance moves the fake clock on by d.
func (h *Host) Advance(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.now = h.now.Add(d)
}

// Waiter is h: it keeps waits as this machine does, answering at once.
func (h *Host) Waiter() engine.Waiter { return h }

// Await returns the event w waits for when it was delivered, at once.
func (h *Host) Await(_ context.Context, _ string, w *record.Wait) (*engine.Delivery, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.Event == "" {
		return nil, nil
	}
	return h.delivered[w.Event], nil
}
