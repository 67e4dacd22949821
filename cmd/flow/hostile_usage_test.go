package main

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/rundir"
)

// A server that reports prompt_tokens -1000000 refunds no budget: the
// turn's usage is unknown, it counts as what was left of the 20-token
// budget (the run's first turn reserved nothing), and the next turn is
// refused before it is sent. The old code let every turn run.
func TestHostileNegativeUsageRefundsNoBudget(t *testing.T) {
	t.Parallel()
	s := modelserver.Start(t)
	var generations atomic.Int32
	s.Handle(func(r modelserver.Request) modelserver.Reply {
		if strings.HasSuffix(r.Path, "/chat/completions") {
			generations.Add(1)
		}
		return modelserver.Reply{Text: "noted", Input: -1000000, Output: 5}
	})
	flow := `name: f
budget: {tokens: 20}
agents: [./agents]
nodes:
  - {id: t1, agent: helper, prompt: one}
  - {id: t2, agent: helper, prompt: two}
  - {id: t3, agent: helper, prompt: three}
  - {id: t4, agent: helper, prompt: four}
`
	run, out, err := runFlowResult(t, driverByName(t, "openai"), s, flow)
	if err == nil {
		for _, f := range journal(t, run) {
			t.Logf("%s %s %+v", f.Type, f.Visit, f.Usage)
		}
		t.Fatalf("the run should fail on its budget:\n%s", out)
	}
	info, ierr := rundir.Inspect(run)
	if ierr != nil {
		t.Fatal(ierr)
	}
	if info.Failure == nil || info.Failure.Root().Kind != "budget" {
		t.Fatalf("want kind budget, got %+v\n%s", info.Failure, out)
	}
	if n := generations.Load(); n != 1 {
		t.Fatalf("%d turns reached the server under a 20-token budget after a turn reported -1000000 tokens, want 1", n)
	}
	for _, f := range journal(t, run) {
		if f.Type == "end" && f.Visit == "t1" && (f.Usage == nil || !f.Usage.Unknown || f.Usage.Tokens() < 0) {
			t.Errorf("t1's usage %+v, want unknown and never negative", f.Usage)
		}
	}
}
