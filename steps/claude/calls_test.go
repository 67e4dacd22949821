package claude

import (
	"os"
	"testing"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/steps/agentcli"
)

// TestToolCallsAreJournalled: a recorded turn that ran Bash once journals
// one tool fact — the call's id and name, the first request's answer and
// its usage — so that its trace has an execute_tool span and a chat span
// per request (docs/tracing.md).
func TestToolCallsAreJournalled(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/tool.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var got []record.ToolCall
	log := &record.ToolLog{Record: func(c record.ToolCall) error { got = append(got, c); return nil }}
	p := newParser(nil, agentcli.NewCalls(log, "claude"))
	w := agentcli.NewLineWriter(p.Feed)
	_, _ = w.Write(b)
	w.Flush()
	if len(got) != 1 {
		t.Fatalf("%d tool facts, want 1: %+v", len(got), got)
	}
	c := got[0]
	if c.ID != "toolu_1" || c.Name != "Bash" || c.Step != 1 || c.Seq != 1 || c.Protocol != "claude" || c.Response != "msg_1" || c.Error {
		t.Errorf("the call: %+v", c)
	}
	if c.Usage == nil || c.Usage.Input == nil || *c.Usage.Input != 2772 || c.Usage.Output == nil || *c.Usage.Output != 1 {
		t.Errorf("the first request's usage: %+v", c.Usage)
	}
}
