package pi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/steps/agentcli"
	"github.com/flowrun/flow/steps/transcript"
)

// parse feeds a whole stream to a parser and returns the outcome.
func parse(t *testing.T, stream []byte) agentcli.Outcome {
	t.Helper()
	return feed(stream).Outcome()
}

// feed feeds a whole stream to a new parser.
func feed(stream []byte) *parser {
	p := newParser(nil, nil)
	w := agentcli.NewLineWriter(p.Feed)
	_, _ = w.Write(stream)
	w.Flush()
	return p
}

// Streams recorded from pi 0.73.1 against internal/modelserver (FLOW_RECORD=1
// go test -run E2E), and retry-gave-up.jsonl against a server answering 500
// with retry.maxRetries 1.
func TestRecordedStreams(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file   string
		status engine.TurnStatus
		output string
		diag   string
		input  int64 // 0: not checked
		turns  int64
	}{
		{file: "plain.jsonl", status: engine.Completed, output: "Hello from the server.", input: 120, turns: 1},
		{file: "tool.jsonl", status: engine.Completed, output: "I saw marker.txt.", turns: 2},
		{file: "memory.jsonl", status: engine.Completed, output: "Second answer: 42.", turns: 1},
		{file: "error500.jsonl", status: engine.Failed, diag: "the model request failed: 500", turns: 1},
		{file: "retry-gave-up.jsonl", status: engine.Failed, diag: "pi gave up after retrying: 500 boom", turns: 2},
		{file: "length.jsonl", status: engine.Failed, output: "A long answer that was cut", diag: "hit its length limit", turns: 1},
	}
	for _, tt := range tests {
		o := parse(t, clitest.Fixture(t, tt.file))
		diags := strings.Join(o.Diagnostics, "\n")
		if o.Status != tt.status || o.Output != tt.output || !strings.Contains(diags, tt.diag) || (tt.diag == "" && diags != "") {
			t.Errorf("%s: %s %q %q, want %s %q and a diagnostic %q", tt.file, o.Status, o.Output, diags, tt.status, tt.output, tt.diag)
		}
		if o.Usage.Turns == nil || *o.Usage.Turns != tt.turns {
			t.Errorf("%s: turns = %v, want %d", tt.file, o.Usage.Turns, tt.turns)
		}
		if tt.input != 0 && (o.Usage.Input == nil || *o.Usage.Input != tt.input) {
			t.Errorf("%s: input = %v, want %d", tt.file, o.Usage.Input, tt.input)
		}
		if o.Usage.Cost == nil || o.Usage.CacheRead == nil {
			t.Errorf("%s: cost and cache reads are reported by pi, got %+v", tt.file, o.Usage)
		}
	}
}

func TestDamagedStreams(t *testing.T) {
	t.Parallel()
	plain := clitest.Fixture(t, "plain.jsonl")
	lines := strings.SplitAfter(string(plain), "\n")
	var withoutEnd []string
	for _, l := range lines {
		if !strings.Contains(l, `"type":"agent_end"`) {
			withoutEnd = append(withoutEnd, l)
		}
	}
	// A tool call as the last assistant message: the stream ends mid-work.
	tool := clitest.Fixture(t, "tool.jsonl")
	var upToCall []string
	for _, l := range strings.SplitAfter(string(tool), "\n") {
		upToCall = append(upToCall, l)
		if strings.Contains(l, `"type":"tool_execution_end"`) {
			break
		}
	}
	tests := []struct {
		name   string
		stream string
		status engine.TurnStatus
		diag   string
	}{
		{name: "empty", stream: "", status: engine.Failed, diag: "pi wrote no events"},
		{name: "truncated", stream: strings.Join(withoutEnd, ""), status: engine.Failed, diag: "ended before agent_end"},
		{
			name: "malformed line", stream: lines[0] + "Warning: something odd\n" + strings.Join(lines[1:], ""),
			status: engine.Failed, diag: `line 2 of pi's output is not a JSON event: "Warning: something odd"`,
		},
		{
			name: "unknown event", stream: lines[0] + `{"type":"brand_new"}` + "\n" + strings.Join(lines[1:], ""),
			status: engine.Completed, diag: `line 2: unknown pi event "brand_new"`,
		},
		{name: "still requesting tools", stream: strings.Join(upToCall, ""), status: engine.Failed, diag: "still requesting tools"},
		{
			name: "aborted", status: engine.Aborted, diag: "aborted",
			stream: `{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"aborted"}}` + "\n",
		},
		{
			name: "no text", status: engine.Failed, diag: "no answer",
			stream: `{"type":"message_end","message":{"role":"assistant","content":[],"stopReason":"stop"}}` + "\n" + `{"type":"agent_end"}` + "\n",
		},
	}
	for _, tt := range tests {
		o := parse(t, []byte(tt.stream))
		if diags := strings.Join(o.Diagnostics, "\n"); o.Status != tt.status || !strings.Contains(diags, tt.diag) {
			t.Errorf("%s: %s %q, want %s and a diagnostic %q", tt.name, o.Status, diags, tt.status, tt.diag)
		}
	}
}

func TestNoUsageIsNotZero(t *testing.T) {
	t.Parallel()
	o := parse(t, []byte(`{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"hi"}],"stopReason":"stop"}}`+"\n"+`{"type":"agent_end"}`+"\n"))
	if o.Status != engine.Completed || o.Usage.Input != nil || o.Usage.Cost != nil || *o.Usage.Turns != 1 {
		t.Errorf("outcome = %+v, want completed with tokens and cost not reported", o)
	}
}

func TestToolList(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		tools []string
		want  string
	}{
		{nil, "read,grep,find,ls"},
		{[]string{}, ""},
		{[]string{"Read", "Glob", "bash", "read"}, "read,find,bash"},
	} {
		if got := toolList(tt.tools); got != tt.want {
			t.Errorf("toolList(%q) = %q, want %q", tt.tools, got, tt.want)
		}
	}
}

func TestHTMLEscapes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log, err := transcript.Open(dir, "a<gent>", transcript.Header{Visit: "v<1>", Driver: "pi", Prompt: "<script>alert(1)</script>"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := feed([]byte(`{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"a & <u>"}],"stopReason":"stop"}}` + "\n" +
		"not json <i>\n"))
	o := p.Outcome()
	if err := log.End(&engine.TurnResult{Status: o.Status, Output: o.Output, Diagnostics: o.Diagnostics}, o.Steps); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "a<gent>.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script>", "<u>", "<i>", "<gent>", "<1>"} {
		if strings.Contains(string(page), bad) {
			t.Errorf("the page holds %q unescaped", bad)
		}
	}
	if !strings.Contains(string(page), "a &amp; &lt;u&gt;") {
		t.Errorf("the answer is missing:\n%s", page)
	}
}
