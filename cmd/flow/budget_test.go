package main

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// TestBudgetHoldsAcrossParallelTurns: a map of six turns at once under one
// budget, on the openai driver against the model server. The first turn
// runs alone and prices the rest, which reserve its size before they
// start: the server bills at most the budget plus one turn, and the
// journal holds what it billed.
func TestBudgetHoldsAcrossParallelTurns(t *testing.T) {
	const turn, budget = 1000, 2500
	s := modelserver.Start(t)
	var billed atomic.Int64
	s.Handle(func(r modelserver.Request) modelserver.Reply {
		if strings.HasSuffix(r.Path, "/chat/completions") {
			billed.Add(turn)
		}
		return modelserver.Reply{Text: "noted", Input: turn - 10, Output: 10, Delay: 200 * time.Millisecond}
	})
	flow := `name: f
budget: {tokens: 2500}
agents: [./agents]
nodes:
  - id: fan
    map: "[1, 2, 3, 4, 5, 6]"
    max: 6
    concurrency: 6
    do: [{id: each, agent: helper, prompt: "item ${{ item }}"}]
`
	run, out, err := runFlowResult(t, driverByName(t, "openai"), s, flow)
	if err == nil {
		t.Fatalf("the turns that do not fit should be refused:\n%s", out)
	}
	t.Logf("the server billed %d tokens under a budget of %d", billed.Load(), budget)
	if got := billed.Load(); got > budget+turn {
		t.Fatalf("the server billed %d tokens under a budget of %d (one turn is %d)\n%s", got, budget, turn, out)
	}
	if got := rundir.Tally(journal(t, run)).Total.Tokens(); got != billed.Load() {
		t.Fatalf("the journal holds %d tokens, the server billed %d", got, billed.Load())
	}
}
