package codex

import (
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/agentcli"
)

// Streams recorded from codex-cli 0.171.0 against the scripted model server.
const (
	recordedPlain = `{"type":"thread.started","thread_id":"01a228e9-d03e-7582-9571-3da626486a10"}
{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for ` + "`test-model`" + ` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."}}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"hello from server"}}
{"type":"turn.completed","usage":{"input_tokens":10120,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":4,"reasoning_output_tokens":0}}
`
	recordedTool = `{"type":"thread.started","thread_id":"01a228f7-4a06-7fb2-a3b5-4f68a455e6c4"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"Listing."}}
{"type":"item.started","item":{"id":"item_2","type":"command_execution","command":"/bin/bash -lc ls","aggregated_output":"","exit_code":null,"status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"/bin/bash -lc ls","aggregated_output":"hello.txt\n","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"done listing"}}
{"type":"turn.completed","usage":{"input_tokens":20411,"cached_input_tokens":100,"cache_write_input_tokens":0,"output_tokens":8,"reasoning_output_tokens":0}}
`
	recordedFailed = `{"type":"thread.started","thread_id":"01a228f7-5c65-7772-8abb-5703f58689df"}
{"type":"turn.started"}
{"type":"error","message":"Reconnecting... 1/1 (We’re currently experiencing high demand, which may cause temporary errors.)"}
{"type":"error","message":"We’re currently experiencing high demand, which may cause temporary errors."}
{"type":"turn.failed","error":{"message":"We’re currently experiencing high demand, which may cause temporary errors."}}
`
)

func TestRecordedStreams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		stream string
		exit   string
		status engine.TurnStatus
		answer string
		diag   string
		input  int64
	}{
		{name: "plain", stream: recordedPlain, status: engine.Completed, answer: "hello from server", diag: "codex: Model metadata", input: 10120},
		{name: "tool call", stream: recordedTool, status: engine.Completed, answer: "done listing", input: 20311}, // 20411 with the 100 cached
		{
			name: "failed", stream: recordedFailed, exit: "codex exited with status 1", status: engine.Failed,
			diag: "codex: Reconnecting... 1/1 (We’re currently experiencing high demand, which may cause temporary errors.); " +
				"codex: We’re currently experiencing high demand, which may cause temporary errors.; " +
				"codex: the turn failed: We’re currently experiencing high demand, which may cause temporary errors.; codex exited with status 1",
		},
		{
			name:   "malformed and unknown",
			stream: "{\"type\":\"thread.started\",\"thread_id\":\"x\"}\nnot json\n{\"type\":\"turn.rewound\"}\n{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":\"hi\"}}\n{\"type\":\"turn.completed\"}\n",
			status: engine.Failed, answer: "hi",
			diag: `malformed line 2: invalid character 'o' in literal null (expecting 'u'): not json; line 3: unknown event type "turn.rewound"`,
		},
		{name: "no turn.completed", stream: "{\"type\":\"thread.started\",\"thread_id\":\"x\"}\n{\"type\":\"turn.started\"}\n", status: engine.Failed, diag: "the stream ended without turn.completed"},
		{name: "no answer", stream: "{\"type\":\"turn.started\"}\n{\"type\":\"turn.completed\"}\n", status: engine.Failed, diag: "no answer"},
	}
	for _, tt := range tests {
		var acts []string
		s := newStream(func(p engine.Progress) { acts = append(acts, p.Activity) }, nil)
		w := agentcli.NewLineWriter(s.line)
		// Split writes mid-line, as a pipe does.
		for i := 0; i < len(tt.stream); i += 7 {
			_, _ = w.Write([]byte(tt.stream[i:min(i+7, len(tt.stream))]))
		}
		w.Flush()
		status, diags := s.outcome(tt.exit)
		got := strings.Join(diags, "; ")
		if status != tt.status || s.answer != tt.answer || (tt.diag == "") != (got == "") || !strings.Contains(got, tt.diag) {
			t.Errorf("%s: %s %q\n%q\nwant %s %q\n%q", tt.name, status, s.answer, got, tt.status, tt.answer, tt.diag)
		}
		if u := s.ledger.Usage(); tt.input != 0 && (u.Input == nil || *u.Input != tt.input || u.Output == nil || u.Cost != nil) {
			t.Errorf("%s: usage %+v", tt.name, s.ledger.Usage())
		}
		if tt.name == "tool call" && !strings.Contains(strings.Join(acts, ","), "running /bin/bash -lc ls") {
			t.Errorf("progress = %q", acts)
		}
	}
}

func TestTOMLString(t *testing.T) {
	t.Parallel()
	got := tomlString("a \"quoted\" \\ line\nnext\ttab\x01 ünï")
	want := `"a \"quoted\" \\ line\nnext\ttab\u0001 ünï"`
	if got != want {
		t.Errorf("tomlString = %s, want %s", got, want)
	}
}
