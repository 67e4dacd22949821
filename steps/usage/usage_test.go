package usage

import "testing"

func n(v int64) *int64 { return &v }

func TestLedger(t *testing.T) {
	t.Parallel()
	var l Ledger
	if u := l.Usage(); u.Input != nil || u.Partial || l.Tokens() != 0 {
		t.Errorf("empty ledger: %+v", u)
	}
	l.Open()
	if u := l.Usage(); u.Input != nil || !u.Partial {
		t.Errorf("a call went out, nothing reported: %+v, want null and partial", u)
	}
	// The same id twice counts once; its later report stands.
	l.Report("msg_1", Anthropic(n(100), n(1), n(400), n(20)))
	l.Report("msg_1", Anthropic(n(100), n(1), n(400), n(20)))
	l.Report("msg_1", Anthropic(n(100), n(9), n(400), n(20)))
	l.Report("msg_2", OpenAI(n(900), n(600), n(3)))
	if got := l.Tokens(); got != 529+903 || l.Calls() != 2 || !l.Usage().Partial || *l.Usage().Input != 400 {
		t.Errorf("live = %d over %d calls (%+v), want %d over 2", got, l.Calls(), l.Usage(), 529+903)
	}
	l.Final()
	if l.Usage().Partial {
		t.Error("final, yet partial")
	}
	// The provider's own total stands instead of the sum.
	l.Total(Anthropic(n(1), n(2), nil, nil))
	if u := l.Usage(); u.Tokens() != 3 || u.CacheRead != nil || u.Partial {
		t.Errorf("total: %+v", u)
	}
	// An empty id is a call of its own.
	var m Ledger
	m.Report("", Anthropic(n(1), nil, nil, nil))
	m.Report("", Anthropic(n(1), nil, nil, nil))
	if m.Tokens() != 2 || m.Usage().Output != nil {
		t.Errorf("two calls without ids: %+v", m.Usage())
	}
}
