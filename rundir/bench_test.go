package rundir

import (
	"fmt"
	"github.com/flowrun/flow/engine/record"
	"testing"
	"time"
)

// BenchmarkReport renders report.html for a run of 10,000 agent visits,
// what the end of a 10,000-item map writes.
func BenchmarkReport(b *testing.B) {
	now := time.Now()
	facts := []*record.Fact{{Type: record.FactRun, Time: now, Status: record.StatusRunning, Flow: "f"}}
	in := int64(5)
	for i := range 10000 {
		ok := true
		v := fmt.Sprintf("each[%d]/work", i+1)
		facts = append(facts, &record.Fact{Type: record.FactStart, Time: now, Visit: v, Node: "work", Kind: "agent"},
			&record.Fact{Type: record.FactEnd, Time: now, Visit: v, Node: "work", Kind: "agent", OK: &ok, Output: "ok", Usage: &record.Usage{Input: &in}, Agent: "worker", Model: "m", Timeout: "30m0s"})
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
