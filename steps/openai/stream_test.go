package openai

import (
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/transcript"
)

// TestRecordedStreams folds recorded streams, as real servers send them.
func TestRecordedStreams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		stream string
		status engine.TurnStatus
		text   string
		diag   string
		input  int64
	}{
		{
			name: "vllm style with usage in the last chunk",
			stream: `data: {"id":"1","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}

data: {"id":"1","choices":[{"index":0,"delta":{"content":"Hi"}}]}

: keep-alive

data: {"id":"1","choices":[{"index":0,"delta":{"content":" there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}}

data: [DONE]
`,
			status: engine.Completed, text: "Hi there", input: 5, // 9 prompt tokens, 4 of them cached
		},
		{
			name: "malformed line",
			stream: `data: {"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}
data: {oops
garbage
data: [DONE]
`,
			status: engine.Failed, text: "x", diag: "malformed line 2: invalid character 'o' looking for beginning of object key string; malformed line 3: not an SSE data line: garbage",
		},
		{
			name:   "error object",
			stream: "data: {\"error\":{\"message\":\"overloaded\"}}\n\ndata: [DONE]\n",
			status: engine.Failed, diag: "the server reported an error in the stream: overloaded; the stream gave no finish reason; no answer",
		},
		{
			name:   "reasoning then content",
			stream: "data: {\"choices\":[{\"delta\":{\"reasoning_content\":\"hmm\"}}]}\ndata: {\"choices\":[{\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\ndata: [DONE]\n",
			status: engine.Completed, text: "ok",
		},
		{
			name:   "content filter",
			stream: "data: {\"choices\":[{\"delta\":{\"content\":\"no\"},\"finish_reason\":\"content_filter\"}]}\ndata: [DONE]\n",
			status: engine.Failed, text: "no", diag: "stopped abnormally (finish_reason content_filter)",
		},
	}
	for _, tt := range tests {
		log, err := transcript.Open(t.TempDir(), "a", transcript.Header{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		p := newParser(func(engine.Progress) {})
		if err := p.stream(strings.NewReader(tt.stream), log); err != nil {
			t.Fatal(err)
		}
		_ = log.Close()
		status, diags := p.outcome()
		got := strings.Join(diags, "; ")
		if status != tt.status || p.text.String() != tt.text || (tt.diag == "") != (got == "") || !strings.Contains(got, tt.diag) {
			t.Errorf("%s: %s %q %q, want %s %q %q", tt.name, status, p.text.String(), got, tt.status, tt.text, tt.diag)
		}
		if u := p.ledger.Usage(); tt.input != 0 && (u.Input == nil || *u.Input != tt.input || u.CacheRead == nil) {
			t.Errorf("%s: usage %+v", tt.name, u)
		}
	}
}
