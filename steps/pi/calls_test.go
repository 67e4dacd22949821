package pi

import (
	"os"
	"testing"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/steps/agentcli"
)

// journal feeds a recorded stream to a parser whose tool calls go to the
// returned facts.
func journal(t *testing.T, file string) []record.ToolCall {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var got []record.ToolCall
	log := &record.ToolLog{Record: func(c record.ToolCall) error { got = append(got, c); return nil }}
	p := newParser(nil, agentcli.NewCalls(log, "pi"))
	w := agentcli.NewLineWriter(p.Feed)
	_, _ = w.Write(b)
	w.Flush()
	return got
}

// TestToolCallsAreJournalled: a recorded turn that ran ls once journals
// one tool fact — the call's id and name, the answer that made it and that
// answer's usage — so that its trace has an execute_tool span and a chat
// span per request (docs/tracing.md); a turn without tools journals none.
func TestToolCallsAreJournalled(t *testing.T) {
	t.Parallel()
	got := journal(t, "testdata/tool.jsonl")
	if len(got) != 1 {
		t.Fatalf("%d tool facts, want 1: %+v", len(got), got)
	}
	c := got[0]
	if c.ID != "call_1" || c.Name != "ls" || c.Step != 1 || c.Seq != 1 || c.Protocol != "pi" || c.Response != "chatcmpl-1" || c.Error || c.Args != "" || c.Result != "" {
		t.Errorf("the call: %+v", c)
	}
	if u := c.Usage; u == nil || u.Input == nil || *u.Input != 1217 || u.Output == nil || *u.Output != 3 {
		t.Errorf("the first request's usage: %+v", c.Usage)
	}
	if got := journal(t, "testdata/plain.jsonl"); len(got) != 0 {
		t.Errorf("a turn without tools journals %+v", got)
	}
}
