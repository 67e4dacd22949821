package ledger

// Exhausted reports whether nothing is left of a budget above the turn:
// what ended turns spent (its children's among them), what the other
// running turns hold and what the turn itself spent so far reach a bound.
func (b *Booking) Exhausted() bool {
	for _, m := range b.meters {
		if m.exhausted(b.h) {
			return true
		}
	}
	return false
}

func (m *Meter) exhausted(h *hold) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	held := m.others(h)
	if m.limit.Tokens > 0 && m.limit.Tokens-m.tokens-held.tokens-h.liveTokens() <= 0 {
		return true
	}
	return m.limit.Cost > 0 && m.limit.Cost-m.cost-held.cost <= 0
}

// Affords reports whether the turn, having spent live tokens so far, may
// send one more request expected to cost next tokens: something is left
// of every budget above it, once what ended turns spent, what the other
// running turns hold and live are taken off, and at least next. A driver
// that sees each request before it goes out (Turn.Affords) refuses the
// one this says no to, so that a turn overspends by no more than the
// error of that estimate.
func (b *Booking) Affords(live, next int64) bool {
	for _, m := range b.meters {
		if !m.affords(b.h, max(live, 0), max(next, 0)) {
			return false
		}
	}
	return true
}

func (m *Meter) affords(h *hold, live, next int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	held := m.others(h)
	if m.limit.Cost > 0 && m.limit.Cost-m.cost-held.cost <= 0 {
		return false
	}
	if m.limit.Tokens <= 0 {
		return true
	}
	left := m.limit.Tokens - m.tokens - held.tokens - live
	return left > 0 && left >= next
}
