package agentcli

import (
	"sync"
	"testing"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/steps/usage"
)

// TestCallsOutOfOrder: the calls of one answer may return in any order
// (pi and the openai driver run them side by side); the first fact of
// each step written carries the answer and its usage, whichever call it
// is, so the trace's chat span per request (docs/tracing.md) finds it.
// Results reported from several goroutines at once are all journalled.
func TestCallsOutOfOrder(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got []record.ToolCall
	log := &record.ToolLog{Record: func(c record.ToolCall) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, c)
		return nil
	}}
	n := func(v int64) *int64 { return &v }
	c := NewCalls(log, "test")
	c.Usage("a1", usage.Call{Input: n(10), Output: n(2)})
	c.Use("a1", "c1", "x")
	c.Use("a1", "c2", "y")
	c.Result("c2", true)
	c.Result("c1", false)
	c.Usage("a2", usage.Call{Input: n(20), Output: n(3)})
	c.Use("a2", "c3", "z")
	c.Use("a2", "c4", "z")
	var wg sync.WaitGroup
	for _, id := range []string{"c3", "c4"} {
		wg.Go(func() { c.Result(id, false) })
	}
	wg.Wait()
	c.Result("c9", false) // never made: nothing
	if len(got) != 4 {
		t.Fatalf("%d facts, want 4: %+v", len(got), got)
	}
	first := got[0]
	if first.ID != "c2" || first.Step != 1 || first.Seq != 2 || !first.Error || first.Response != "a1" || first.Usage == nil || *first.Usage.Input != 10 {
		t.Errorf("the first fact of step 1 = %+v, want c2 with a1's usage", first)
	}
	if got[1].ID != "c1" || got[1].Usage != nil || got[1].Response != "" {
		t.Errorf("the second fact of step 1 = %+v, want c1 without usage", got[1])
	}
	if got[2].Step != 2 || got[2].Response != "a2" || got[2].Usage == nil || *got[2].Usage.Output != 3 || got[3].Step != 2 || got[3].Usage != nil {
		t.Errorf("step 2's facts = %+v, %+v", got[2], got[3])
	}
}
