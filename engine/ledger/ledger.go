package ledger

import (
	"slices"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/ordered"
	"github.com/flowrun/flow/schema"
)

// Ledger is what a run knows of the price of a turn — every agent's
// completed turns so far — and which of its budgets ended above their
// bound (docs/resume-and-budgets.md). A resume rebuilds it from the
// journal.
type Ledger struct {
	first   Mutex
	newLock func() Locker // held by the run's one unpriced turn under a budget

	mu    Locker
	turns map[string]*turnHistory
	over  []*Meter
}

// turnHistory is what an agent's completed turns spent: tokens of those
// that reported tokens, dollars of those that reported a cost.
type turnHistory struct {
	tokens []int64
	cost   []float64
}

// New is an empty ledger: first is the mutex the run's one unpriced turn
// holds, newLock makes the locks of the ledger and of its turns' holds.
func New(first Mutex, newLock func() Locker) *Ledger {
	return &Ledger{first: first, newLock: newLock, turns: map[string]*turnHistory{}, mu: newLock()}
}

// Note records a completed turn of agent.
func (l *Ledger) Note(agent string, u record.Usage) {
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
func (l *Ledger) price(agent string) (want, floor spend, priced bool) {
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
func (l *Ledger) Smallest(agent string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.turns[agent]; h != nil && len(h.tokens) > 0 {
		return slices.Min(h.tokens)
	}
	return 0
}

func (l *Ledger) Typical(agent string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if h := l.turns[agent]; h != nil && len(h.tokens) > 0 {
		return median(h.tokens)
	}
	return 0
}

// Priced reports whether a turn of agent could be priced: false before
// any turn of the run completed.
func (l *Ledger) Priced(agent string) bool {
	_, _, priced := l.price(agent)
	return priced
}

// TokenPrice is what the ledger reserves for agent's next turn and the
// least it needs, in tokens, and whether it could price it.
func (l *Ledger) TokenPrice(agent string) (want, floor int64, priced bool) {
	w, f, ok := l.price(agent)
	return w.tokens, f.tokens, ok
}

func median[T int64 | float64](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// overspent notes a meter that ended above its bound.
func (l *Ledger) overspent(m *Meter) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !slices.Contains(l.over, m) {
		l.over = append(l.over, m)
	}
}

// Overspends are the budgets above their bound, first crossed first.
func (l *Ledger) Overspends() []record.Overspend {
	l.mu.Lock()
	over := slices.Clone(l.over)
	l.mu.Unlock()
	var out []record.Overspend
	for _, m := range over {
		out = append(out, m.overspend())
	}
	return out
}

// Replay rebuilds the ledger from a resumed run's journal: each agent
// visit that succeeded counts as its attempts' turns, of equal shares.
func (l *Ledger) Replay(f *record.Fact) {
	if f.Kind != schema.KindAgent || f.Agent == "" || f.Usage == nil || !f.Succeeded() {
		return
	}
	u := *f.Usage
	if n := int64(f.Attempts); n > 1 {
		u = record.Usage{}
		t := f.Usage.Tokens() / n
		u.Input = &t
		if f.Usage.Cost != nil {
			c := *f.Usage.Cost / float64(n)
			u.Cost = &c
		}
	}
	l.Note(f.Agent, u)
}
