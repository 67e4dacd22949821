package temporal

import (
	"testing"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/schema"
)

// TestHoldsOnlyWaits: a run holds nothing but waits once every leaf visit
// that started and did not end waits; containers hold through their
// children, an ask or a command holds on its own, and a new attempt
// starts afresh.
func TestHoldsOnlyWaits(t *testing.T) {
	start := func(v string, k schema.Kind) *record.Fact {
		return &record.Fact{Type: record.FactStart, Visit: v, Kind: k}
	}
	waiting := func(v string) *record.Fact {
		return &record.Fact{Type: record.FactWaiting, Visit: v, Wait: &record.Wait{Event: "go"}}
	}
	end := func(v string) *record.Fact { return &record.Fact{Type: record.FactEnd, Visit: v} }
	h := newHolds(nil)
	steps := []struct {
		fact *record.Fact
		want bool
	}{
		{start("both", schema.KindParallel), false},
		{start("both/w/ci", schema.KindWait), false}, // started, not yet waiting
		{start("both/s/build", schema.KindRun), false},
		{waiting("both/w/ci"), false}, // the command still runs
		{end("both/s/build"), true},
		{start("both/s/ask", schema.KindAsk), false},
		{end("both/s/ask"), true},
		{&record.Fact{Type: record.FactRun, Status: record.StatusRunning}, false}, // a resume
		{start("both/w/ci", schema.KindWait), false},
		{waiting("both/w/ci"), true},
		{end("both/w/ci"), false},
	}
	for i, s := range steps {
		h.add(s.fact)
		if got := h.onlyWaits(); got != s.want {
			t.Fatalf("after fact %d (%s %s): onlyWaits %v, want %v", i, s.fact.Type, s.fact.Visit, got, s.want)
		}
	}
}
