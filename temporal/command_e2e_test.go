package temporal

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/schema"
)

// holding is the commander of worker i: the first command any worker
// begins waits until its context ends (its worker stops under it).
type holding struct {
	i     int
	began *atomic.Int32
	first chan int // the worker that began the first command
}

func (h holding) Run(ctx context.Context, c *engine.Command) (*engine.CommandResult, error) {
	if h.began.Add(1) == 1 {
		h.first <- h.i
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
	return &engine.CommandResult{Passed: true, Report: strings.Join(c.Argv, " ")}, nil
}

// TestE2EACommandWhoseWorkerDiedIsNotRunAgain: a local run never runs a
// `run:` command twice by itself (a command whose process died runs again
// only by flow resume), so neither does a run on Temporal: when the worker
// running a command stops under it, the next attempt on the other worker
// ends the visit `unavailable`, naming the worker, and the command began
// once.
func TestE2EACommandWhoseWorkerDiedIsNotRunAgain(t *testing.T) {
	var began atomic.Int32
	first := make(chan int, 1)
	cl := newClusterWith(t, 0, func(i int) engine.Commander { return holding{i: i, began: &began, first: first} },
		&byWorker{name: "A"}, &byWorker{name: "B"})
	go func() {
		select {
		case i := <-first:
			cl.stops[i]() // the worker that began it goes away mid-command
		case <-time.After(30 * time.Second):
		}
	}()
	out, facts, _ := cl.run(`name: f
nodes:
  - {id: once, run: [deploy]}
`, Timing{Heartbeat: 2 * time.Second})
	if out.OK {
		t.Fatal("the run succeeded: the command ran again after its worker died")
	}
	root := out.Failure.Root()
	if root.Kind != schema.FailUnavailable || root.Visit != "once" || !strings.Contains(root.Message, "never runs twice") {
		t.Fatalf("the run failed %s at %s: %s; want unavailable at once", root.Kind, root.Visit, root.Message)
	}
	if n := began.Load(); n != 1 {
		t.Errorf("the command began %d times, want once", n)
	}
	expectEnds(t, facts, map[string]string{"once": "unavailable"})
}
