package engine

import (
	"context"
	"slices"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/ordered"
	"github.com/flowrun/flow/schema"
)

// ledger is what a run knows of the price of a turn — every agent's
// completed turns so far — and which of its budgets ended above their
// bound (docs/resume-and-budgets.md). A resume rebuilds it from the
// journal.
type ledger struct {
	first Mutex // held by the run's one unpriced turn under a budget

	mu    Locker
	turns map[string]*turnHistory
	over  []*meter
}

// turnHistory is what an agent's completed turns spent: tokens of those
// that reported tokens, dollars of those that reported a cost.
type turnHistory struct {
	tokens []int64
	cost   []float64
}

func newLedger(rt Runtime) *ledger {
	return &ledger{first: rt.NewMutex(), turns: map[string]*turnHistory{}, mu: rt.NewLock()}
}

// note records a completed turn of agent.
func (l *ledger) note(agent string, u Usage) {
	t := u.Tokens()
	if t <= 0 && u.Cost == nil || u.Unknown { // an unknown turn's figures price nothing
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.turns[agent]
	if h == nil {
		h = &turnHistory{}
		l.turns[agent] = h
	}
	if t > 0 {
		h.tokens = append(h.tokens, t)
	}
	if u.Cost != nil {
		h.cost = append(h.cost, *u.Cost)
	}
}

// price is what a turn of agent is expected to spend (want: the agent's
// typical turn, else the smallest turn of the run) and the least it can
// spend (floor: the agent's smallest turn, else the run's). priced is
// false before any turn of the run completed: the turn is the first and
// may run.
func (l *ledger) price(agent string) (want, floor spend, priced bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var leastTokens []int64
	var leastCost []float64
	for _, agent := range ordered.Keys(l.turns) {
		h := l.turns[agent]
		if len(h.tokens) > 0 {
			leastTokens = append(leastTokens, slices.Min(h.tokens))
		}
		if len(h.cost) > 0 {
			leastCost = append(leastCost, slices.Min(h.cost))
		}
	}
	if len(leastTokens) == 0 && len(leastCost) == 0 {
		return spend{}, spend{}, false
	}
	h := l.turns[agent]
	if h != nil && len(h.tokens) > 0 {
		want.tokens, floor.tokens = median(h.tokens), slices.Min(h.tokens)
	} else if len(leastTokens) > 0 {
		want.tokens = slices.Min(leastTokens)
		floor.tokens = want.tokens
	}
	if h != nil && len(h.cost) > 0 {
		want.cost, floor.cost = median(h.cost), slices.Min(h.cost)
	} else if len(leastCost) > 0 {
		want.cost = slices.Min(leastCost)
		floor.cost = want.cost
	}
	return want, floor, true
}

// Smallest and Typical are an agent's smallest and typical (median) turn
// in tokens, 0 before it completed one.
func (l *ledger) smallest(agent string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.turns[agent]; h != nil && len(h.tokens) > 0 {
		return slices.Min(h.tokens)
	}
	return 0
}

func (l *ledger) typical(agent string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.turns[agent]; h != nil && len(h.tokens) > 0 {
		return median(h.tokens)
	}
	return 0
}

func median[T int64 | float64](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// overspent notes a meter that ended above its bound.
func (l *ledger) overspent(m *meter) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Contains(l.over, m) {
		l.over = append(l.over, m)
	}
}

// overspends are the budgets above their bound, first crossed first.
func (l *ledger) overspends() []record.Overspend {
	l.mu.Lock()
	over := slices.Clone(l.over)
	l.mu.Unlock()
	var out []record.Overspend
	for _, m := range over {
		out = append(out, m.overspend())
	}
	return out
}

// replay rebuilds the ledger from a resumed run's journal: each agent
// visit that succeeded counts as its attempts' turns, of equal shares.
func (l *ledger) replay(f *Fact) {
	if f.Kind != schema.KindAgent || f.Agent == "" || f.Usage == nil || !f.Succeeded() {
		return
	}
	u := *f.Usage
	if n := int64(f.Attempts); n > 1 {
		u = Usage{}
		t := f.Usage.Tokens() / n
		u.Input = &t
		if f.Usage.Cost != nil {
			c := *f.Usage.Cost / float64(n)
			u.Cost = &c
		}
	}
	l.note(f.Agent, u)
}

// booking is one turn's reservations under the budgets above it.
type booking struct {
	h      *hold
	meters []*meter
	first  Mutex // the ledger's, when this turn is the run's unpriced first
}

// book reserves what a turn of agent at visit is expected to spend under
// every budget above it, before it starts. The run's first turn, which
// nothing prices, may run — one at a time: another unpriced turn waits
// for it to end, and is priced by it. A refusal is a `budget` failure and
// books nothing.
func (r *runner) book(ctx context.Context, fr *frame, agent, visit string) (*booking, *Failure) {
	if len(fr.meters) == 0 {
		return nil, nil
	}
	blind := r.blind
	b := &booking{h: &hold{visit: visit, blind: blind, mu: r.rt.NewLock()}, meters: fr.meters}
	want, floor, priced := r.ledger.price(agent)
	// A delegated child does not wait for the run's first turn to price
	// it: that turn may be its parent, waiting on it. Unpriced, it is
	// bound by its reservation, of all that is left (docs/delegation.md).
	child := !priced && r.isChild(visit)
	b.h.blind = blind || child
	b.h.shares = blind && r.mayDelegate(visit)
	if !priced && !child {
		if err := r.ledger.first.Lock(ctx); err != nil {
			return nil, cancelled(ctx, visit)
		}
		if want, floor, priced = r.ledger.price(agent); priced {
			r.ledger.first.Unlock()
		} else {
			b.first = r.ledger.first
		}
	}
	b.h.priced = priced
	for i, m := range fr.meters {
		if why := m.reserve(b.h, want, floor); why != "" {
			for _, booked := range fr.meters[:i] {
				booked.settle(b.h, nil)
			}
			if b.first != nil {
				b.first.Unlock()
			}
			return nil, &Failure{Kind: schema.FailBudget, Message: why}
		}
	}
	return b, nil
}

// watch is the turn's live budget watch (Turn.Watch) and its bound
// (Turn.TokensLeft): the turn is stopped once its live tokens, with what
// the budgets settled and the other running turns hold, cross a budget.
func (b *booking) watch() (func(live int64) bool, int64) {
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

// settle ends the turn's reservations with what it spent (u, nil when it
// reported nothing), noting each budget it leaves above its bound;
// stopped says its LeafRunner stopped it for a budget (a blind one's
// reservation).
func (r *runner) settle(b *booking, u *Usage, stopped bool) {
	if b == nil {
		return
	}
	if stopped {
		b.h.stop()
	}
	for _, m := range b.meters {
		if m.settle(b.h, u) {
			r.ledger.overspent(m)
		}
	}
	if b.first != nil {
		b.first.Unlock()
	}
}

// charge adds usage no turn booked (an earlier attempt's, on resume) to
// every budget above a visit.
func (r *runner) charge(fr *frame, u *Usage) {
	for _, m := range fr.meters {
		if m.add(u) {
			r.ledger.overspent(m)
		}
	}
}
