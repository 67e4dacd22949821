package main

import (
	"strings"
	"testing"

	"github.com/flowrun/flow/engine/record"
)

// TestTreeUsageShown: "with its delegates" is the visit's own figure (its
// last end, as shown) and its children's, not its own earlier attempts
// again; a parent that reported no usage (an exec program) still shows
// what its subtree spent.
func TestTreeUsageShown(t *testing.T) {
	tokens := func(n int64) *record.Usage { return &record.Usage{Input: &n} }
	yes, no := true, false
	start := func(visit, parent string) *record.Fact {
		return &record.Fact{Type: record.FactStart, Visit: visit, Node: visit, Parent: parent}
	}
	end := func(visit string, ok *bool, u *record.Usage) *record.Fact {
		f := &record.Fact{Type: record.FactEnd, Visit: visit, Node: visit, OK: ok, Usage: u}
		if !*ok {
			f.Error = &record.Failure{Kind: "stopped", Message: "interrupted"}
		}
		return f
	}
	facts := []*record.Fact{
		start("lead", ""), start("lead/delegate:scout#1", "lead"), end("lead", &no, tokens(208)),
		start("lead", ""), end("lead/delegate:scout#1", &yes, tokens(0)), end("lead", &yes, tokens(490)),
		start("exec", ""), start("exec/delegate:scout#1", "exec"), end("exec/delegate:scout#1", &yes, tokens(25)), end("exec", &yes, nil),
	}
	rows := strings.Join(visitRows(facts), "\n")
	for _, want := range []string{"(490 tokens; 490 with its delegates)", "(25 tokens with its delegates)"} {
		if !strings.Contains(rows, want) {
			t.Errorf("flow show's rows lack %q:\n%s", want, rows)
		}
	}
}
