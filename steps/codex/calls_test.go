package codex

import (
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/steps/agentcli"
)

// TestToolCallsAreJournalled: the tool items of a turn are journalled as
// tool facts, a command from its start to its completion, a file change
// shown only completed too, a failed command as an error; messages are no
// tool calls. Codex shows no usage per request, so the facts carry none
// (the trace has one chat span and an execute_tool span per call:
// docs/tracing.md).
func TestToolCallsAreJournalled(t *testing.T) {
	t.Parallel()
	stream := recordedTool + `{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_4","type":"file_change","changes":[{"path":"a.txt","kind":"add"}],"status":"completed"}}
{"type":"item.started","item":{"id":"item_5","type":"command_execution","command":"false","aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_5","type":"command_execution","command":"false","aggregated_output":"","exit_code":1,"status":"failed"}}
{"type":"item.completed","item":{"id":"item_6","type":"mcp_tool_call","server":"docs","tool":"search","status":"completed"}}
{"type":"turn.completed","usage":{"input_tokens":30411,"cached_input_tokens":100,"cache_write_input_tokens":0,"output_tokens":9,"reasoning_output_tokens":0}}
`
	var got []record.ToolCall
	log := &record.ToolLog{Record: func(c record.ToolCall) error { got = append(got, c); return nil }}
	s := newStream(func(engine.Progress) {}, agentcli.NewCalls(log, "codex"))
	w := agentcli.NewLineWriter(s.line)
	_, _ = w.Write([]byte(stream))
	w.Flush()
	want := []struct {
		id, name string
		err      bool
	}{{"item_2", "command_execution", false}, {"item_4", "file_change", false}, {"item_5", "command_execution", true}, {"item_6", "search", false}}
	if len(got) != len(want) {
		t.Fatalf("%d tool facts, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		c := got[i]
		if c.ID != w.id || c.Name != w.name || c.Error != w.err || c.Protocol != "codex" || c.Seq != i+1 || c.Usage != nil || c.Turn != got[0].Turn {
			t.Errorf("fact %d = %+v, want %s %s error %v", i, c, w.id, w.name, w.err)
		}
	}
}
