package serve

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine/record"
)

// TestVisitViewsDrawTheDelegationTree: a delegated child's view names its
// parent and its depth, and the parent's view gives what it spent with
// its subtree.
func TestVisitViewsDrawTheDelegationTree(t *testing.T) {
	ok := true
	n := func(v int64) *record.Usage { return &record.Usage{Input: &v} }
	facts := []*record.Fact{
		{Type: record.FactStart, Visit: "lead", Kind: "agent"},
		{Type: record.FactStart, Visit: "lead/delegate:scout#1", Kind: "agent", Parent: "lead", Input: "look"},
		{Type: record.FactStart, Visit: "lead/delegate:scout#1/delegate:scout#1", Kind: "agent", Parent: "lead/delegate:scout#1", Input: "deeper"},
		{Type: record.FactEnd, Visit: "lead/delegate:scout#1/delegate:scout#1", Kind: "agent", OK: &ok, Usage: n(2)},
		{Type: record.FactEnd, Visit: "lead/delegate:scout#1", Kind: "agent", OK: &ok, Usage: n(3)},
		{Type: record.FactEnd, Visit: "lead", Kind: "agent", OK: &ok, Usage: n(10)},
	}
	views := map[string]VisitView{}
	for _, v := range visitViews(facts, false) {
		views[v.Visit] = v
	}
	lead, scout, deep := views["lead"], views["lead/delegate:scout#1"], views["lead/delegate:scout#1/delegate:scout#1"]
	if lead.TreeUsage == nil || lead.TreeUsage.Tokens() != 15 || scout.TreeUsage == nil || scout.TreeUsage.Tokens() != 5 || deep.TreeUsage != nil {
		t.Errorf("tree usage: lead %v, scout %v, deep %v", lead.TreeUsage, scout.TreeUsage, deep.TreeUsage)
	}
	if scout.Parent != "lead" || scout.Depth != 1 || deep.Depth != 2 || lead.Depth != 0 {
		t.Errorf("parents and depths: %+v %+v %+v", lead, scout, deep)
	}
}

// TestRunPageIndentsChildren: the run page draws a child under its
// parent, indented, and the parent's total with its delegates.
func TestRunPageIndentsChildren(t *testing.T) {
	ok := true
	in := int64(10)
	facts := []*record.Fact{
		{Type: record.FactStart, Visit: "lead", Kind: "agent"},
		{Type: record.FactStart, Visit: "lead/delegate:scout#1", Kind: "agent", Parent: "lead", Input: "look"},
		{Type: record.FactEnd, Visit: "lead/delegate:scout#1", Kind: "agent", OK: &ok, Usage: &record.Usage{Input: &in}},
		{Type: record.FactEnd, Visit: "lead", Kind: "agent", OK: &ok, Usage: &record.Usage{Input: &in}},
	}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, f := range facts {
		f.Time = base
	}
	v := &RunView{ID: "r1", Flow: "lead", Status: "succeeded", Started: base, Ended: base.Add(time.Second), Visits: visitViews(facts, false)}
	var buf bytes.Buffer
	data := map[string]any{"Title": "run r1", "Run": v, "Self": []*RunView{v}, "Zone": time.Local, "Timeline": runTimeline(v.Visits, v.Started, v.Ended)}
	if err := pages().ExecuteTemplate(&buf, "run", data); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{`style="padding-left:1.5em"><code>lead/delegate:scout#1</code>`, `20 with its delegates`} {
		if !strings.Contains(page, want) {
			t.Errorf("the run page does not hold %s", want)
		}
	}
}
