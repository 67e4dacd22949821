package local

import (
	"context"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
)

// waiter keeps a run's waits in its run directory (docs/waits.md): an
// event is there once delivered (rundir.Deliver); nothing here holds a
// walk that waits, so an unsatisfied wait ends the run waiting.
type waiter struct{ dir string }

// Await returns the event w waits for when it was delivered, at once.
func (wt waiter) Await(_ context.Context, _ string, w *record.Wait) (*engine.Delivery, error) {
	if w.Event == "" {
		return nil, nil
	}
	s, err := rundir.Delivered(wt.dir, w.Event)
	if s == nil || err != nil {
		return nil, err
	}
	return &engine.Delivery{Data: s.Data, By: s.By, Time: s.Time}, nil
}
