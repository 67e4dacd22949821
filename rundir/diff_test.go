package rundir

import (
	"testing"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/schema"
)

func ended(visit string, ok bool, out any, model string, kind schema.FailKind) []*record.Fact {
	f := &record.Fact{Type: record.FactEnd, Visit: visit, Node: visit, OK: &ok, Output: out, Model: model}
	if kind != "" {
		f.Error = &record.Failure{Kind: kind, Visit: visit}
	}
	return []*record.Fact{{Type: record.FactStart, Visit: visit, Node: visit}, f}
}

func journal(parts ...[]*record.Fact) []*record.Fact {
	var out []*record.Fact
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

func TestDiffNamesWhatChanged(t *testing.T) {
	a := journal(ended("same", true, "x", "m", ""), ended("gone", true, "y", "m", ""),
		ended("out", true, map[string]any{"n": 1.0, "s": "a"}, "m", ""),
		ended("model", true, "z", "m1", ""), ended("fail", true, "ok", "m", ""))
	b := journal(ended("same", true, "x", "m", ""), ended("out", true, map[string]any{"n": 2.0, "s": "a"}, "m", ""),
		ended("model", true, "z", "m2", ""), ended("fail", false, nil, "m", schema.FailRateLimit), ended("new", true, "w", "m", ""))
	d := Diff("A", a, "B", b)
	got := map[string]VisitDiff{}
	for _, v := range d.Visits {
		got[v.Visit] = v
	}
	want := map[string]Change{"same": Same, "gone": Removed, "out": Changed, "model": Changed, "fail": Changed, "new": Added}
	for visit, c := range want {
		if got[visit].Change != c {
			t.Errorf("%s: %s, want %s", visit, got[visit].Change, c)
		}
	}
	if d.Same != 1 || d.Differed != 5 {
		t.Errorf("same %d differed %d", d.Same, d.Differed)
	}
	if o := got["out"]; o.Line != 2 || o.LineA != `  "n": 1,` || o.LineB != `  "n": 2,` {
		t.Errorf("out's first differing line: %d %q %q", o.Line, o.LineA, o.LineB)
	}
	if f := got["fail"]; f.B.Status != "failed" || f.B.Kind != string(schema.FailRateLimit) || len(f.Fields) != 3 {
		t.Errorf("fail: %+v %+v", f, f.B)
	}
	if m := got["model"]; len(m.Fields) != 1 || m.Fields[0] != "model" {
		t.Errorf("model: %v", m.Fields)
	}
}

func TestFirstDifferingLine(t *testing.T) {
	for _, c := range []struct {
		a, b   string
		line   int
		la, lb string
	}{
		{"x\ny", "x\nz", 2, "y", "z"},
		{"x", "x\nmore", 2, "", "more"},
		{"a", "b", 1, "a", "b"},
		{"same", "same", 0, "", ""},
	} {
		n, la, lb := firstDiffering(c.a, c.b)
		if n != c.line || la != c.la || lb != c.lb {
			t.Errorf("%q vs %q: %d %q %q, want %d %q %q", c.a, c.b, n, la, lb, c.line, c.la, c.lb)
		}
	}
}
