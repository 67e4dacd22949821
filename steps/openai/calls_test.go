package openai

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/delegatetest"
	"github.com/flowrun/flow/internal/modelserver"
)

// TestToolCallsAreJournalled: a turn whose model delegates twice, one
// call an answer, journals a tool fact per call — its id and name, the
// request whose answer made it and that answer's usage as billed — so that
// its trace has an execute_tool span per call and a chat span per request,
// the last with the rest of the turn's usage (docs/tracing.md).
func TestToolCallsAreJournalled(t *testing.T) {
	t.Setenv("FLOW_TEST_OPENAI_KEY", fakeKey)
	fake := delegatetest.Start(t, delegatetest.Answer)
	s := modelserver.Start(t)
	s.Handle(delegatetest.Script("Both children answered.", delegatetest.TwoCalls...))
	tn := delegating(t, s, fake)
	var mu sync.Mutex
	var got []record.ToolCall
	tn.Tools = &record.ToolLog{Record: func(c record.ToolCall) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, c)
		return nil
	}}
	res, err := New(Options{}).Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed || res.Output != "Both children answered." {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	bills := s.Bills()
	if len(got) != 2 || len(bills) != 3 {
		t.Fatalf("%d tool facts and %d bills, want 2 and 3: %+v", len(got), len(bills), got)
	}
	var steps int64
	for i, c := range got {
		if c.Name != "delegate" || c.ID == "" || c.Step != i+1 || c.Seq != i+1 || c.Protocol != "openai" || c.Error ||
			c.Response != bills[i].ID || c.Turn != got[0].Turn {
			t.Errorf("fact %d = %+v", i, c)
		}
		if c.Usage == nil || c.Usage.Tokens() != bills[i].Tokens() {
			t.Errorf("fact %d's usage = %+v, want the %d tokens billed for its answer", i, c.Usage, bills[i].Tokens())
			continue
		}
		steps += c.Usage.Tokens()
	}
	if rest := res.Usage.Tokens() - steps; rest != bills[2].Tokens() {
		t.Errorf("the turn spent %d beyond its calls' answers, want the last answer's %d", rest, bills[2].Tokens())
	}
	if got[0].ID == got[1].ID || slices.Contains([]string{got[0].Response, got[1].Response}, "") {
		t.Errorf("facts = %+v", got)
	}
}
