package reuse

import (
	"context"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/delegate"
)

// delegateAgain repeats, before a recorded answer of a turn that may
// delegate is returned, each delegate call the recorded visit made, in the
// order it made them, through the turn's own delegation (docs/delegation.md):
// the walker runs each child as a visit of this run, its turn answered from
// the recording by its key in turn (or live, under --reuse, when it
// misses), so the run's journal holds the same tree and flow test
// exercises it. A call that cannot be carried, or a child the recording
// saw succeed that has no answer now, fails the turn naming its visit.
func delegateAgain(ctx context.Context, h hit, t *engine.Turn) error {
	if t.Delegate == nil {
		return nil
	}
	for _, c := range h.rec.kids[h.fact.Visit] {
		reply, err := delegate.Call(ctx, t.Delegate.Socket, t.Delegate.Token, c.agent, c.task)
		if err != nil {
			return unavailable("%s: repeating its recorded delegate call to %s (%s): %w", t.Visit, c.agent, c.path, err)
		}
		if reply.Error != "" && c.ok {
			return unavailable("%s: its recorded delegate call to %s (%s) has no answer now: %s", t.Visit, c.agent, c.path, reply.Error)
		}
	}
	return nil
}
