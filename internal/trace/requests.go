package trace

import (
	"time"

	"github.com/flowrun/flow/engine/record"
)

// request is one chat request of a visit: when it ran and what it spent.
type request struct {
	begin, end time.Time
	usage      *record.Usage
}

// requests splits a visit's usage into its requests where the journal
// shows them: a native turn's tool facts carry, on each step's first
// call, the usage of the answer that made the calls (docs/native.md), so
// each step is a request from the previous step's last result to its
// first call, and the answer after the last result is the last request,
// with what the visit spent beyond the steps. A visit whose tool facts do
// not account for its usage that way (a step without usage, more spent in
// the steps than in the visit) is one request, as is a visit of any other
// driver: the journal records no more of it.
func requests(f *record.Fact, begin time.Time, tools []*record.Fact) []request {
	whole := []request{{begin, f.Time, f.Usage}}
	if len(tools) == 0 {
		return whole
	}
	var out []request
	rest := *f.Usage
	rest.Turns = nil
	prev := begin
	type step struct {
		turn string
		n    int
	}
	seen := map[step]bool{}
	for _, tf := range tools {
		c := tf.Tool
		k := step{c.Turn, c.Step}
		if seen[k] {
			prev = tf.Time
			continue
		}
		seen[k] = true
		if c.Usage == nil || !subtract(&rest, c.Usage) {
			return whole
		}
		u := *c.Usage
		u.Turns = nil
		called := tf.Time.Add(-time.Duration(c.WallMS) * time.Millisecond)
		out = append(out, request{prev, later(prev, called), &u})
		prev = tf.Time
	}
	return append(out, request{prev, later(prev, f.Time), &rest})
}

// subtract takes o from u, field by field; false when o reports what u
// does not, or more than u.
func subtract(u *record.Usage, o *record.Usage) bool {
	for _, p := range []struct{ a, b **int64 }{
		{&u.Input, &o.Input}, {&u.Output, &o.Output}, {&u.CacheRead, &o.CacheRead}, {&u.CacheWrite, &o.CacheWrite},
	} {
		if *p.b == nil {
			continue
		}
		if *p.a == nil || **p.a < **p.b {
			return false
		}
		v := **p.a - **p.b
		*p.a = &v
	}
	if o.Cost != nil {
		if u.Cost == nil {
			return false
		}
		c := max(*u.Cost-*o.Cost, 0)
		u.Cost = &c
	}
	return true
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
