package engine

import (
	"fmt"
	"sync"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// meter counts what the visits under one budget spent (docs/resume-and-budgets.md, Budgets): a flow's
// budget, or one visit of a node that has `budget:`. Meters nest: a turn
// counts against every meter above it.
type meter struct {
	limit *flows.Budget
	where string // the visit path (or flow name) that set the budget

	mu     sync.Mutex
	tokens int64
	cost   float64
}

func newMeter(b *flows.Budget, where string) *meter { return &meter{limit: b, where: where} }

func (m *meter) add(u *Usage) {
	if u == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tokens += u.Tokens()
	if u.Cost != nil {
		m.cost += *u.Cost
	}
}

// refuse says why a turn must not start: nothing is left, or less than the
// smallest turn this agent has taken in the run so far (minTokens, 0 if
// none yet).
func (m *meter) refuse(minTokens int64) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.limit.Tokens > 0 {
		left := m.limit.Tokens - m.tokens
		if left <= 0 || left < minTokens {
			return fmt.Sprintf("the budget of %s has %d tokens left of %d, less than this agent's smallest turn (%d); the turn was not sent", m.where, max(left, 0), m.limit.Tokens, minTokens)
		}
	}
	if m.limit.Cost > 0 && m.cost >= m.limit.Cost {
		return fmt.Sprintf("the budget of %s is spent: $%.4f of $%.4f; the turn was not sent", m.where, m.cost, m.limit.Cost)
	}
	return ""
}

// crossed says whether live tokens of a running turn would cross the bound.
func (m *meter) crossed(live int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.limit.Tokens > 0 && m.tokens+live > m.limit.Tokens
}

// left is what a token budget has left, if it bounds tokens.
func (m *meter) left() (int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.limit.Tokens <= 0 {
		return 0, false
	}
	return max(m.limit.Tokens-m.tokens, 1), true
}

// withBudget returns fr with a meter for b appended, or fr if b is nil.
func (f *frame) withBudget(b *flows.Budget, where string) *frame {
	if b == nil || (b.Tokens == 0 && b.Cost == 0) {
		return f
	}
	cp := *f
	cp.meters = append(append([]*meter{}, f.meters...), newMeter(b, where))
	return &cp
}

// charge adds a visit's usage to every budget above it.
func (f *frame) charge(u *Usage) {
	for _, m := range f.meters {
		m.add(u)
	}
}

// budgetRefusal checks every budget above a turn before it is sent.
func (r *runner) budgetRefusal(fr *frame, agent string) *Failure {
	if len(fr.meters) == 0 {
		return nil
	}
	min := r.smallestTurn(agent)
	for _, m := range fr.meters {
		if why := m.refuse(min); why != "" {
			return &Failure{Kind: schema.FailBudget, Message: why}
		}
	}
	return nil
}

func (r *runner) smallestTurn(agent string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.minTurn[agent]
}

func (r *runner) noteTurn(agent string, u Usage) {
	t := u.Tokens()
	if t <= 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if cur, ok := r.minTurn[agent]; !ok || t < cur {
		r.minTurn[agent] = t
	}
}

// watch is the live budget watch of a turn under f (Turn.Watch and
// Turn.TokensLeft): whether a turn's live tokens cross a budget above it,
// and the fewest tokens any budget above has left now (0: no token budget).
func (f *frame) watch() (func(live int64) bool, int64) {
	if len(f.meters) == 0 {
		return nil, 0
	}
	var left int64
	for _, m := range f.meters {
		if l, ok := m.left(); ok && (left == 0 || l < left) {
			left = l
		}
	}
	meters := f.meters
	return func(live int64) bool {
		for _, m := range meters {
			if live > 0 && m.crossed(live) {
				return true
			}
		}
		return false
	}, left
}
