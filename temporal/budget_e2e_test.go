package temporal

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
)

// streaming is a driver that streams a turn's tokens 100 at a time until
// it reached its size, or is stopped; billed is what its turns spent,
// stopped or not, as a provider bills it.
type streaming struct {
	billed *atomic.Int64
	turns  atomic.Int32
}

func (d *streaming) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	d.turns.Add(1)
	size := int64(3000)
	if t.Visit == "first" {
		size = 1000
	}
	var tok int64
	end := func(st engine.TurnStatus) *engine.TurnResult {
		d.billed.Add(tok)
		in := tok
		return &engine.TurnResult{Status: st, Output: "ok", Usage: record.Usage{Input: &in}}
	}
	for tok < size {
		select {
		case <-ctx.Done():
			return end(engine.Aborted), context.Cause(ctx)
		case <-time.After(5 * time.Millisecond):
		}
		tok += 100
		t.Progress(engine.Progress{Activity: "writing", Tokens: tok})
	}
	return end(engine.Completed), nil
}

// TestE2EParallelTurnsOnTwoWorkersStayWithinTheBudget: after a first turn
// of 1,000 tokens prices the agent, two turns that would each spend 3,000
// run at once on two workers under what is left of a 3,000-token budget.
// Each worker stops its turn when the turn's reservation is spent, so the
// run spends at most the budget plus one turn, and the journal holds what
// the driver billed.
func TestE2EParallelTurnsOnTwoWorkersStayWithinTheBudget(t *testing.T) {
	var billed atomic.Int64
	a, b := &streaming{billed: &billed}, &streaming{billed: &billed}
	cl := newClusterOf(t, 1, a, b)
	out, facts, _ := cl.run(`name: f
budget: {tokens: 3000}
`+testAgents+`nodes:
  - {id: first, agent: worker, prompt: go}
  - id: both
    parallel:
      left: [{id: l, agent: worker, prompt: go}]
      right: [{id: r, agent: worker, prompt: go}]
`, Timing{})
	if out.OK {
		t.Fatalf("the run should be stopped by its budget: %+v", out)
	}
	if a.turns.Load() == 0 || b.turns.Load() == 0 {
		t.Fatalf("turns by worker: %d and %d; both workers should run one", a.turns.Load(), b.turns.Load())
	}
	if got := billed.Load(); got > 3000+1000 {
		t.Fatalf("the turns billed %d tokens under a budget of 3000", got)
	}
	if got := rundir.Tally(facts).Total.Tokens(); got != billed.Load() {
		t.Fatalf("the journal holds %d tokens, the driver billed %d", got, billed.Load())
	}
	t.Logf("billed %d tokens under a budget of 3000", billed.Load())
}
