package temporal

import (
	"context"
	"encoding/json"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
)

// A run's waits on Temporal (docs/waits.md, On Temporal) are the
// workflow's own: a wait for a time is a workflow timer, a wait for an
// event blocks the walk's coroutine until the event's signal came (or
// the timer of its timeout fired). No worker process and no activity is
// held meanwhile. Events are SignalEvent signals, sealed and bound to the
// run's workflow as every payload (docs/temporal.md, What Temporal
// keeps): an unsealed one is dropped by a keyed run. The workflow keeps
// the first delivery of each event name, before or after its wait is
// reached, and QueryEvents reads what it keeps, which is how a sender
// learns whether its delivery was taken, taken already, or refused.
const (
	QueryEvents = "flow.events"
	SignalEvent = "flow.event"
)

// EventSignal delivers Event, with its JSON Data (canonical: compact,
// keys sorted), to the run's waits. ID names this delivery, so that its
// sender can tell it from another one of the same event.
type EventSignal struct {
	Event string          `json:"event"`
	Data  json.RawMessage `json:"data"`
	By    string          `json:"by,omitempty"`
	ID    string          `json:"id"`
}

// KeptEvent is the delivery of an event a run keeps: the first one, and
// the workflow's time it was taken.
type KeptEvent struct {
	Data json.RawMessage `json:"data"`
	By   string          `json:"by,omitempty"`
	ID   string          `json:"id"`
	Time time.Time       `json:"time"`
}

// signalWaiter is the engine.Waiter of a run's workflow. Coroutines run
// one at a time, and queries between them, so it needs no lock.
type signalWaiter struct {
	events map[string]KeptEvent
}

var _ engine.Waiter = (*signalWaiter)(nil)

// newSignalWaiter takes the run's events on a coroutine of its own and
// answers the events query; it starts with the events carried from the
// execution before (continue-as-new). It makes no command: histories
// recorded before waits ran on Temporal replay unchanged.
func newSignalWaiter(ctx workflow.Context, carried map[string]KeptEvent) (*signalWaiter, error) {
	wt := &signalWaiter{events: carried}
	if wt.events == nil {
		wt.events = map[string]KeptEvent{}
	}
	if err := workflow.SetQueryHandler(ctx, QueryEvents, func() (map[string]KeptEvent, error) { return wt.events, nil }); err != nil {
		return nil, err
	}
	ch := workflow.GetSignalChannel(ctx, SignalEvent)
	workflow.Go(ctx, func(c workflow.Context) {
		for {
			var s EventSignal
			ch.Receive(c, &s)
			// An event is delivered once: a later delivery changes
			// nothing, whatever its data (its sender reads which was kept).
			if _, had := wt.events[s.Event]; s.Event != "" && !had {
				wt.events[s.Event] = KeptEvent{Data: s.Data, By: s.By, ID: s.ID, Time: workflow.Now(c)}
			}
		}
	})
	return wt, nil
}

// Await blocks the wait's coroutine until its event is kept, or its end
// (w.Until) came, on a workflow timer; a wait for a time only sleeps. It
// returns the event, or nil at the end: the walker decides from there
// (engine.waitWalk), with the workflow's clock.
func (wt *signalWaiter) Await(ctx context.Context, _ string, w *record.Wait) (*engine.Delivery, error) {
	wf := workflowOf(ctx)
	kept := func() bool { _, ok := wt.events[w.Event]; return w.Event != "" && ok }
	for !kept() {
		if w.Until == nil {
			if err := workflow.Await(wf, kept); err != nil {
				return nil, settle(ctx, wf)
			}
			continue
		}
		left := w.Until.Sub(workflow.Now(wf))
		if left <= 0 {
			return nil, nil
		}
		// A timer may fire a moment before the workflow's clock reads
		// its end: the loop sleeps what is left.
		if _, err := workflow.AwaitWithTimeout(wf, left, kept); err != nil {
			return nil, settle(ctx, wf)
		}
	}
	k := wt.events[w.Event]
	return &engine.Delivery{Data: k.Data, By: k.By, Time: k.Time}, nil
}
