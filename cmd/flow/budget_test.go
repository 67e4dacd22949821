package main

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/rundir"
)

// Four turns of about 550 input tokens under a budget of 1200: the run
// fails with kind budget, and the fourth turn never reaches the model
// server.
func TestBudgetNeverSendsTheTurnItCannotCover(t *testing.T) {
	s := modelserver.Start(t)
	var generations atomic.Int32
	s.Handle(func(r modelserver.Request) modelserver.Reply {
		if strings.HasSuffix(r.Path, "/chat/completions") {
			generations.Add(1)
		}
		return modelserver.Reply{Text: "noted", Input: 550, Output: 5}
	})
	flow := `name: f
budget: {tokens: 1200}
agents: [./agents]
nodes:
  - {id: t1, agent: helper, prompt: one}
  - {id: t2, agent: helper, prompt: two}
  - {id: t3, agent: helper, prompt: three}
  - {id: t4, agent: helper, prompt: four}
`
	run, out, err := runFlowResult(t, driverByName(t, "openai"), s, flow)
	if err == nil {
		t.Fatalf("the run should fail on its budget:\n%s", out)
	}
	info, ierr := rundir.Inspect(run)
	if ierr != nil {
		t.Fatal(ierr)
	}
	if info.Failure == nil || info.Failure.Root().Kind != "budget" {
		t.Fatalf("want kind budget, got %+v\n%s", info.Failure, out)
	}
	if n := generations.Load(); n >= 4 {
		t.Fatalf("%d turns reached the model server; the fourth must not", n)
	}
	if info.Resumable {
		t.Fatal("a run that failed its budget must not be resumable")
	}
}
