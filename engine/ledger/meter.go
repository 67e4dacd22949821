package ledger

import (
	"fmt"
	"slices"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
)

// Meter is the ledger of one budget (docs/resume-and-budgets.md): a
// flow's, or one visit of a node that has `budget:`. Meters nest: a turn
// counts against every meter above it. What it settled is what ended
// turns spent; what it holds is what the turns running under it reserved
// before they started, or what they spent so far when that is more.
type Meter struct {
	limit *flows.Budget
	where string // the visit path (or flow name) that set the budget

	mu      Locker
	tokens  int64
	cost    float64
	holding []reservation // the running turns' reservations here, in the order they were made
	over    record.Overspend
}

// spend is an amount of a budget: tokens and dollars.
type spend struct {
	tokens int64
	cost   float64
}

// hold is one running turn as its meters see it: its live token count,
// which the driver's progress raises, shared by every meter above it.
type hold struct {
	visit  string
	priced bool   // false: the run's first turn, which nothing could price
	blind  bool   // its LeafRunner cannot watch it live: its reservation is its bound
	mu     Locker // guards live and stopped, which the driver's progress sets
	live   int64
	// stopped: its live tokens crossed a budget, and the turn is stopped.
	stopped bool
}

func (h *hold) setLive(n int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.live = n
}

func (h *hold) liveTokens() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.live
}

func (h *hold) stop() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.stopped = true
}

func (h *hold) isStopped() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stopped
}

// reservation is one running turn's reservation under a meter. The meter keeps
// them in a slice, not a map: their costs are summed, and float addition
// gives the same sum only in the same order, on every host and replay.
type reservation struct {
	h *hold
	r spend
}

// holdOf is h's reservation here (zero when it holds none).
func (m *Meter) holdOf(h *hold) spend {
	for _, o := range m.holding {
		if o.h == h {
			return o.r
		}
	}
	return spend{}
}

// NewMeter is the meter of budget b, set by where (a visit path, or
// "flow" and its name), guarded by lock.
func NewMeter(lock Locker, b *flows.Budget, where string) *Meter {
	return &Meter{limit: b, where: where, mu: lock}
}

// others is what the running turns other than h hold: each its
// reservation, or its live tokens when it already spent more.
func (m *Meter) others(h *hold) spend {
	var s spend
	for _, o := range m.holding {
		if o.h == h {
			continue
		}
		s.tokens += max(o.r.tokens, o.h.liveTokens())
		s.cost += o.r.cost
	}
	return s
}

// reserve books what h expects to spend (want) before its turn starts,
// from what is left once settled spend and every other running turn's
// hold are taken off. It refuses — and books nothing — when what is left
// is nothing, or less than floor, the least a turn of this agent has cost.
// A turn that cannot be watched live (blind) is bound by its reservation,
// so it gets at least half of what is left, not less than want — and all
// of it when it is the run's first, which runs alone.
func (m *Meter) reserve(h *hold, want, floor spend) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	held := m.others(h)
	var r spend
	if m.limit.Tokens > 0 {
		left := m.limit.Tokens - m.tokens - held.tokens
		if left <= 0 || left < floor.tokens {
			return fmt.Sprintf("the budget of %s has %d tokens left of %d (%d held by running turns), less than this agent's smallest turn (%d); the turn was not sent",
				m.where, max(left, 0), m.limit.Tokens, held.tokens, floor.tokens)
		}
		r.tokens = want.tokens
		switch {
		case h.blind && !h.priced:
			r.tokens = left
		case h.blind:
			r.tokens = max(r.tokens, left/2)
		}
		r.tokens = min(r.tokens, left)
	}
	if m.limit.Cost > 0 {
		left := m.limit.Cost - m.cost - held.cost
		if left <= 0 || left < floor.cost {
			return fmt.Sprintf("the budget of %s has $%.4f left of $%.4f ($%.4f held by running turns), less than this agent's smallest turn ($%.4f); the turn was not sent",
				m.where, max(left, 0), m.limit.Cost, held.cost, floor.cost)
		}
		r.cost = min(want.cost, left)
	}
	m.holding = append(m.holding, reservation{h, r})
	return ""
}

// bound is the most tokens h may spend here while it runs: what is left
// once settled spend and the other running turns' holds are taken off, or
// for a blind turn its reservation. ok is false when the meter bounds no
// tokens.
func (m *Meter) bound(h *hold) (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.limit.Tokens <= 0 {
		return 0, false
	}
	if h.blind {
		return max(m.holdOf(h).tokens, 1), true
	}
	return max(m.limit.Tokens-m.tokens-m.others(h).tokens, 1), true
}

// crossed reports whether h's live tokens, with the settled spend and the
// other running turns' holds, cross the bound.
func (m *Meter) crossed(h *hold, live int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.limit.Tokens > 0 && m.tokens+m.others(h).tokens+live > m.limit.Tokens
}

// settle ends h's hold and adds what its turn really spent (u, nil when
// it reported nothing). It reports whether the budget is now above its
// bound, and says why the first time it is.
func (m *Meter) settle(h *hold, u *record.Usage) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if u != nil && u.Unknown { // counts as its reservation, never as a refund
		held, r := m.others(h), m.holdOf(h)
		u = u.Counted(max(r.tokens, h.liveTokens()), r.cost, m.limit.Tokens-m.tokens-held.tokens, m.limit.Cost-m.cost-held.cost)
	}
	m.holding = slices.DeleteFunc(m.holding, func(o reservation) bool { return o.h == h })
	return m.addLocked(u, func() string {
		if h.isStopped() {
			return fmt.Sprintf("%s was stopped as it crossed the budget, and had spent past it by then", h.visit)
		}
		if !h.priced {
			return fmt.Sprintf("the run's first turn (%s) could not be priced before it ran", h.visit)
		}
		return fmt.Sprintf("%s was running when the budget ran out and overshot it", h.visit)
	})
}

// add counts usage that no hold booked: what an earlier attempt of a
// resumed run spent.
func (m *Meter) add(u *record.Usage) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.addLocked(u, func() string { return "the run's earlier attempts spent it before it resumed" })
}

func (m *Meter) addLocked(u *record.Usage, why func() string) bool {
	if u == nil {
		return m.over.Why != ""
	}
	m.tokens += u.Tokens()
	if u.Cost != nil {
		m.cost += *u.Cost
	}
	overTokens := m.limit.Tokens > 0 && m.tokens > m.limit.Tokens
	overCost := m.limit.Cost > 0 && m.cost > m.limit.Cost
	if !overTokens && !overCost {
		return false
	}
	if m.over.Why == "" {
		m.over.Why = why()
	}
	m.over.Budget = m.where
	if overTokens {
		m.over.Tokens, m.over.LimitTokens = m.tokens-m.limit.Tokens, m.limit.Tokens
	}
	if overCost {
		m.over.Cost, m.over.LimitCost = m.cost-m.limit.Cost, m.limit.Cost
	}
	return true
}

func (m *Meter) overspend() record.Overspend {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.over
}
