package rundir

import (
	"fmt"
	"testing"
	"time"
)

// BenchmarkReport renders report.html for a run of 10,000 agent visits,
// what the end of a 10,000-item map writes.
func BenchmarkReport(b *testing.B) {
	now := time.Now()
	facts := []*Fact{{Type: FactRun, Time: now, Status: StatusRunning, Flow: "f"}}
	in := int64(5)
	for i := range 10000 {
		ok := true
		v := fmt.Sprintf("each[%d]/work", i+1)
		facts = append(facts, &Fact{Type: FactStart, Time: now, Visit: v, Node: "work", Kind: "agent"},
			&Fact{Type: FactEnd, Time: now, Visit: v, Node: "work", Kind: "agent", OK: &ok, Output: "ok", Usage: &Usage{Input: &in}, Agent: "worker", Model: "m", Timeout: "30m0s"})
	}
	dir := b.TempDir()
	info, err := summarize(dir, facts)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := writeReport(dir, info, facts, nil); err != nil {
			b.Fatal(err)
		}
	}
}
