package engine

import (
	"context"

	"github.com/flowrun/flow/engine/ledger"
)

// turnStop lets a delegate call end the turn that made it: a parent whose
// call comes back — answered, failed or refused — when nothing is left of
// a budget above it must not send the request that would read the reply
// (docs/delegation.md, "Limits are refusals"). The turn then fails
// `budget` with what it spent. Its latches are the host's, so the walker
// stays free of channels of its own.
type turnStop struct {
	b     *ledger.Booking
	stop  Latch // opened by the call that found nothing left
	ended Latch // opened once the turn's LeafRunner returned
	mu    Locker
}

// open opens l once (a latch of the host's may not open twice).
func (s *turnStop) open(l Latch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !l.IsOpen() {
		l.Open()
	}
}

// stoppable runs f, the turn, with a ctx that a delegate call may end
// (turnStop.afterCall) with cause errBudget; it reports whether one did.
// The wait for the stop is a task of the host's group beside the turn,
// as an ask's timeout is (within).
func (r *runner) stoppable(ctx context.Context, b *ledger.Booking, f func(ctx context.Context, ts *turnStop)) (stopped bool) {
	ts := &turnStop{b: b, stop: r.rt.NewLatch(), ended: r.rt.NewLatch(), mu: r.rt.NewLock()}
	r.rt.Group(ctx, 2, 0, errBudget, func(gctx context.Context, i int) bool {
		if i == 0 {
			f(gctx, ts)
			return true // ends the wait
		}
		if ts.stop.Wait(gctx) == nil {
			stopped = true
			return true // ends the turn, with cause errBudget
		}
		return false
	})
	return stopped
}

// turnEnded says the turn's LeafRunner returned: the calls held by
// afterCall may answer, no process is left to read them.
func (s *turnStop) turnEnded() { s.open(s.ended) }

// afterCall ends the parent's turn when nothing is left of a budget above
// it, before the reply reaches it: the call's reply is held until the
// turn's LeafRunner returned, its process gone, so the turn never sends
// another request. It reports whether it stopped the turn.
func (s *turnStop) afterCall() bool {
	if s == nil || s.b == nil || !s.b.Exhausted() {
		return false
	}
	s.open(s.stop)
	_ = s.ended.Wait(context.Background()) // the turn ends: its ctx was just ended
	return true
}
