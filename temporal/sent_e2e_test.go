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

// dying is the driver of worker i: the first turn any worker takes
// reports 500 tokens, then waits until its worker stops under it; every
// other turn spends 10.
type dying struct {
	i     int
	turns *atomic.Int32
	first chan int
}

func (d dying) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	in := int64(10)
	if d.turns.Add(1) == 1 {
		t.Progress(engine.Progress{Activity: "writing", Tokens: 500})
		d.first <- d.i
		<-ctx.Done()
		return &engine.TurnResult{Status: engine.Aborted}, context.Cause(ctx)
	}
	return &engine.TurnResult{Status: engine.Completed, Output: "ok", Usage: record.Usage{Input: &in}}, nil
}

// TestE2EATurnWhoseWorkerDiedIsRecordedAsSent: a turn's worker stops
// under it after it reported 500 tokens; Temporal sends the turn again to
// the other worker. The visit's end records the first attempt as sent on
// the first worker with the 500 tokens it last reported, counts two
// attempts, and its usage (and so the run's, and the budget's) holds both
// attempts' spend, marked partial.
func TestE2EATurnWhoseWorkerDiedIsRecordedAsSent(t *testing.T) {
	var turns atomic.Int32
	first := make(chan int, 1)
	a := dying{i: 0, turns: &turns, first: first}
	b := dying{i: 1, turns: &turns, first: first}
	cl := newCluster(t, a, b)
	go func() {
		select {
		case i := <-first:
			time.Sleep(2 * time.Second) // the heartbeat with the tokens reaches the server
			cl.stops[i]()
		case <-time.After(30 * time.Second):
		}
	}()
	out, facts, _ := cl.run(`name: f
`+testAgents+`nodes:
  - {id: a, agent: worker, prompt: go}
`, Timing{Heartbeat: 2 * time.Second})
	if !out.OK {
		t.Fatalf("the run failed: %+v", out.Failure)
	}
	var end *record.Fact
	for _, f := range facts {
		if f.Type == record.FactEnd && f.Visit == "a" {
			end = f
		}
	}
	if end == nil {
		t.Fatal("visit a has no end")
	}
	if len(end.Sent) != 1 || end.Sent[0].Attempt != 1 || end.Sent[0].Tokens == nil || *end.Sent[0].Tokens != 500 ||
		(end.Sent[0].Worker != cl.workers[0].Queue() && end.Sent[0].Worker != cl.workers[1].Queue()) {
		t.Errorf("a's end records sent attempts %+v, want attempt 1 on a worker with 500 tokens", end.Sent)
	}
	if end.Attempts != 2 {
		t.Errorf("a's end counts %d attempts, want 2", end.Attempts)
	}
	if end.Usage == nil || end.Usage.Tokens() != 510 || !end.Usage.Partial {
		t.Errorf("a's usage %+v, want 510 tokens (500 sent and lost, 10 of the retry), partial", end.Usage)
	}
	if got := out.Usage.Tokens(); got != 510 {
		t.Errorf("the run's usage is %d tokens, want 510", got)
	}
	if txt := rundir.SentText(end); txt == "" {
		t.Error("SentText says nothing of the sent attempt")
	} else {
		t.Log(txt)
	}
}
