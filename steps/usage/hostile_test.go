package usage

import (
	"math"
	"testing"
)

func f(v float64) *float64 { return &v }

// A figure below zero or past MaxFigure, or a cost below zero, NaN or
// infinite, is not counted, and makes the turn's usage unknown: a provider
// cannot refund a budget (prompt_tokens -1000000) nor overflow a sum.
func TestHostileFiguresMakeUsageUnknown(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		call Call
	}{
		{"negative prompt", OpenAI(n(-1000000), nil, n(5))},
		{"negative prompt, none cached", OpenAI(n(-1000000), n(0), n(5))},
		{"negative output", Anthropic(n(10), n(-1), nil, nil)},
		{"negative cache read", Anthropic(n(10), n(1), n(-400), nil)},
		{"negative cached share", OpenAI(n(100), n(-50), n(5))},
		{"past MaxFigure", OpenAI(n(math.MaxInt64), nil, n(1))},
		{"negative cost", Call{Input: n(1), Cost: f(-5)}},
		{"NaN cost", Call{Input: n(1), Cost: f(math.NaN())}},
		{"infinite cost", Call{Input: n(1), Cost: f(math.Inf(1))}},
	} {
		var l Ledger
		l.Report("ok", Anthropic(n(100), n(10), nil, nil))
		l.Report("bad", c.call)
		l.Final()
		u := l.Usage()
		if !u.Unknown || u.Tokens() != 110 || u.Cost != nil {
			t.Errorf("%s: usage %+v (%d tokens), want unknown, the valid call's 110 tokens, no cost", c.name, u, u.Tokens())
		}
		var total Ledger
		total.Report("ok", Anthropic(n(100), n(10), nil, nil))
		total.Total(c.call)
		if u := total.Usage(); !u.Unknown || u.Tokens() != 110 || u.Partial {
			t.Errorf("%s as the total: usage %+v, want unknown, the calls' 110 tokens, final", c.name, u)
		}
	}
	var l Ledger
	l.Report("a", OpenAI(n(100), n(500), n(1)))
	if u := l.Usage(); u.Unknown || u.Tokens() != 501 {
		t.Errorf("more cached than prompted: %+v, want 501 tokens billed, known", u)
	}
}
