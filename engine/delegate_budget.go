package engine

import (
	"context"
	"errors"

	"github.com/flowrun/flow/engine/ledger"
)

// turnStop lets a delegate call end the turn that made it: a parent whose
// call comes back — answered, failed or refused — when nothing is left of
// a budget above it must not send the request that would read the reply
// (docs/delegation.md, "Limits are refusals"). The turn then fails
// `budget` with what it spent.
type turnStop struct {
	b     *ledger.Booking
	stop  context.CancelCauseFunc
	ended chan struct{} // closed once the turn's LeafRunner returned
}

// startTurn is ctx for one turn that a delegate call may stop, and its
// turnStop; end is called once the LeafRunner returned.
func startTurn(ctx context.Context, b *ledger.Booking) (context.Context, *turnStop) {
	tctx, stop := context.WithCancelCause(ctx)
	return tctx, &turnStop{b: b, stop: stop, ended: make(chan struct{})}
}

// end closes the turn's context and reports whether a delegate call
// stopped it for a budget.
func (s *turnStop) end(tctx context.Context) bool {
	close(s.ended)
	stopped := errors.Is(context.Cause(tctx), errBudget)
	s.stop(nil)
	return stopped
}

// afterCall ends the parent's turn when nothing is left of a budget above
// it, before the reply reaches it: the call's reply is held until the
// turn's LeafRunner returned, its process gone, so the turn never sends
// another request. It reports whether it stopped the turn.
func (s *turnStop) afterCall() bool {
	if s == nil || s.b == nil || !s.b.Exhausted() {
		return false
	}
	s.stop(errBudget)
	<-s.ended
	return true
}
