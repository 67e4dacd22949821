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
