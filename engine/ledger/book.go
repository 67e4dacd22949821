package ledger

import (
	"context"
	"errors"

	"github.com/flowrun/flow/engine/record"
)

// Booking is one turn's reservations under the budgets above it.
type Booking struct {
	h      *hold
	meters []*Meter
	first  Mutex // the ledger's, when this turn is the run's unpriced first
}

// ErrWithdrawn is Book's error when ctx ended while the turn waited for
// the run's first turn to price it.
var ErrWithdrawn = errors.New("the booking was withdrawn")

// Book reserves what a turn of agent at visit is expected to spend under
// every meter above it (meters, outermost first), before it starts. The
// run's first turn, which nothing prices, may run — one at a time:
// another unpriced turn waits for it to end, and is priced by it. blind
// says the host cannot watch the turn live; child says whether the visit
// is a delegated child, asked only of an unpriced turn. A refusal (why
// the budget has not enough left) books nothing; so does ErrWithdrawn.
func (l *Ledger) Book(ctx context.Context, meters []*Meter, agent, visit string, blind bool, child func() bool) (b *Booking, refusal string, err error) {
	if len(meters) == 0 {
		return nil, "", nil
	}
	b = &Booking{h: &hold{visit: visit, blind: blind, mu: l.newLock()}, meters: meters}
	want, floor, priced := l.price(agent)
	// A delegated child does not wait for the run's first turn to price
	// it: that turn may be its parent, waiting on it. Unpriced, it is
	// bound by its reservation, of all that is left (docs/delegation.md).
	isChild := !priced && child()
	b.h.blind = blind || isChild
	if !priced && !isChild {
		if err := l.first.Lock(ctx); err != nil {
			return nil, "", ErrWithdrawn
		}
		if want, floor, priced = l.price(agent); priced {
			l.first.Unlock()
		} else {
			b.first = l.first
		}
	}
	b.h.priced = priced
	if why := reserveAll(meters, b.h, want, floor); why != "" {
		if b.first != nil {
			b.first.Unlock()
		}
		return nil, why, nil
	}
	return b, "", nil
}

// reserveAll reserves h's turn under every meter, or under none: it
// returns why the first that refused did.
func reserveAll(meters []*Meter, h *hold, want, floor spend) string {
	for i, m := range meters {
		if why := m.reserve(h, want, floor); why != "" {
			for _, booked := range meters[:i] {
				booked.settle(h, nil)
			}
			return why
		}
	}
	return ""
}

// Watch is the turn's live budget watch (Turn.Watch) and its bound
// (Turn.TokensLeft): the turn is stopped once its live tokens, with what
// the budgets settled and the other running turns hold, cross a budget.
func (b *Booking) Watch() (func(live int64) bool, int64) {
	if b == nil {
		return nil, 0
	}
	var left int64
	for _, m := range b.meters {
		if l, ok := m.bound(b.h); ok && (left == 0 || l < left) {
			left = l
		}
	}
	return func(live int64) bool {
		if live <= 0 {
			return false
		}
		b.h.setLive(live)
		for _, m := range b.meters {
			if m.crossed(b.h, live) {
				b.h.stop()
				return true
			}
		}
		return false
	}, left
}

// Settle ends the turn's reservations with what it spent (u, nil when it
// reported nothing), noting each budget it leaves above its bound;
// stopped says its LeafRunner stopped it for a budget (a blind one's
// reservation).
func (l *Ledger) Settle(b *Booking, u *record.Usage, stopped bool) {
	if b == nil {
		return
	}
	if stopped {
		b.h.stop()
	}
	for _, m := range b.meters {
		if m.settle(b.h, u) {
			l.overspent(m)
		}
	}
	if b.first != nil {
		b.first.Unlock()
	}
}

// Charge adds usage no turn booked (an earlier attempt's, on resume) to
// every meter above a visit.
func (l *Ledger) Charge(meters []*Meter, u *record.Usage) {
	for _, m := range meters {
		if m.add(u) {
			l.overspent(m)
		}
	}
}

// Affords says why a child of agent could not start under meters, or "":
// what a turn of it would reserve is reserved and given back, so that a
// call the budget refuses starts no visit. The child's own turn books
// again, atomically, as it starts.
func (l *Ledger) Affords(meters []*Meter, agent string) string {
	want, floor, priced := l.price(agent)
	h := &hold{visit: "a delegate call", priced: priced, blind: !priced, mu: l.newLock()}
	if why := reserveAll(meters, h, want, floor); why != "" {
		return why
	}
	for _, m := range meters {
		m.settle(h, nil)
	}
	return ""
}
