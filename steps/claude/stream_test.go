package claude

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

// Streams recorded from Claude Code 2.1.197 against internal/modelserver
// (FLOW_RECORD=1 go test -run E2E).
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
		{file: "typed.jsonl", status: engine.Completed, output: `{"approved":true,"remarks":[]}`, turns: 2},
		{file: "error500.jsonl", status: engine.Failed, diag: "HTTP 500", turns: 1},
		{file: "length.jsonl", status: engine.Failed, output: "API Error", diag: "hit its length limit", turns: 1},
	}
	for _, tt := range tests {
		o := parse(t, clitest.Fixture(t, tt.file))
		diags := strings.Join(o.Diagnostics, "\n")
		if o.Status != tt.status || !strings.HasPrefix(o.Output, tt.output) || (tt.output == "" && o.Output != "" && tt.status == engine.Completed) ||
			!strings.Contains(diags, tt.diag) || (tt.diag == "" && diags != "") {
			t.Errorf("%s: %s %q %q, want %s %q and a diagnostic %q", tt.file, o.Status, o.Output, diags, tt.status, tt.output, tt.diag)
		}
		if o.Usage.Turns == nil || *o.Usage.Turns != tt.turns {
			t.Errorf("%s: turns = %v, want %d", tt.file, o.Usage.Turns, tt.turns)
		}
		if tt.input != 0 && (o.Usage.Input == nil || *o.Usage.Input != tt.input) {
			t.Errorf("%s: input = %v, want %d", tt.file, o.Usage.Input, tt.input)
		}
		if o.Usage.Cost == nil {
			t.Errorf("%s: the cost is reported by claude", tt.file)
		}
	}
}

func TestDamagedStreams(t *testing.T) {
	t.Parallel()
	lines := strings.SplitAfter(string(clitest.Fixture(t, "plain.jsonl")), "\n")
	var noResult []string
	for _, l := range lines {
		if !strings.Contains(l, `"type":"result"`) {
			noResult = append(noResult, l)
		}
	}
	result := func(fields string) string {
		return `{"type":"result","subtype":"success","is_error":false,"result":"hi","stop_reason":"end_turn","num_turns":1,` + fields + "}\n"
	}
	tests := []struct {
		name   string
		stream string
		status engine.TurnStatus
		diag   string
	}{
		{name: "empty", stream: "", status: engine.Failed, diag: "claude wrote no events"},
		{name: "truncated", stream: strings.Join(noResult, ""), status: engine.Failed, diag: "without a result event"},
		{
			name: "malformed line", stream: lines[0] + "oops\n" + strings.Join(lines[1:], ""),
			status: engine.Failed, diag: `line 2 of claude's output is not a JSON event: "oops"`,
		},
		{
			name: "unknown event", stream: lines[0] + `{"type":"brand_new"}` + "\n" + strings.Join(lines[1:], ""),
			status: engine.Completed, diag: `line 2: unknown claude event "brand_new"`,
		},
		{name: "success with is_error", stream: result(`"is_error":true`), status: engine.Failed, diag: "claude's turn failed (subtype success): hi"},
		{name: "still requesting tools", stream: result(`"stop_reason":"tool_use"`), status: engine.Failed, diag: "still requesting tools"},
		{name: "length", stream: result(`"stop_reason":"max_tokens"`), status: engine.Failed, diag: "length limit"},
		{name: "max turns", stream: result(`"subtype":"error_max_turns","errors":["too many"]`), status: engine.Failed, diag: "ended with error_max_turns: too many"},
		{name: "no text", stream: result(`"result":" "`), status: engine.Failed, diag: "no answer"},
		{name: "denied tool", stream: result(`"permission_denials":[{"tool_name":"Write"}]`), status: engine.Completed, diag: "denied the tool Write"},
	}
	for _, tt := range tests {
		o := parse(t, []byte(tt.stream))
		if diags := strings.Join(o.Diagnostics, "\n"); o.Status != tt.status || !strings.Contains(diags, tt.diag) {
			t.Errorf("%s: %s %q, want %s and a diagnostic %q", tt.name, o.Status, diags, tt.status, tt.diag)
		}
	}
}

func TestResultWithoutUsage(t *testing.T) {
	t.Parallel()
	o := parse(t, []byte(`{"type":"result","subtype":"success","is_error":false,"result":"hi","stop_reason":"end_turn"}`+"\n"))
	if o.Status != engine.Completed || o.Usage.Input != nil || o.Usage.Cost != nil || o.Usage.Turns != nil {
		t.Errorf("outcome = %+v, want completed with nothing reported", o)
	}
}

func TestToolList(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		tools []string
		want  string
	}{
		{nil, "Read,Grep,Glob"},
		{[]string{}, ""},
		{[]string{"read", "find", "Bash", "ls", "Edit"}, "Read,Glob,Bash,Edit"},
	} {
		if got := strings.Join(toolList(tt.tools), ","); got != tt.want {
			t.Errorf("toolList(%q) = %q, want %q", tt.tools, got, tt.want)
		}
	}
}

func TestHTMLEscapes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log, err := transcript.Open(dir, "a<gent>", transcript.Header{Visit: "v<1>", Driver: "claude", Prompt: "<script>alert(1)</script>"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := feed([]byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"a & <u>"},{"type":"tool_use","name":"<x>","input":{"c":"<y>"}}]}}` + "\n" +
		`{"type":"user","message":{"content":[{"type":"tool_result","content":"<z>"}]}}` + "\n" +
		"not json <i>\n"))
	o := p.Outcome()
	if err := log.End(&engine.TurnResult{Status: o.Status, Output: o.Output, Diagnostics: o.Diagnostics}, o.Steps); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "a<gent>.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script>", "<u>", "<i>", "<gent>", "<1>", "<x>", "<y>", "<z>"} {
		if strings.Contains(string(page), bad) {
			t.Errorf("the page holds %q unescaped", bad)
		}
	}
	if !strings.Contains(string(page), "a &amp; &lt;u&gt;") || !strings.Contains(string(page), "&lt;z&gt;") {
		t.Errorf("the answer or the tool result is missing:\n%s", page)
	}
}

// The API's own stream (--include-partial-messages) completes a message's
// usage: message_delta's output tokens count, whichever order Claude
// Code's assistant event (the usage at the message's start) comes in,
// and a subagent's message is counted apart from its parent's.
func TestPartialMessagesCountEachMessageWhole(t *testing.T) {
	t.Parallel()
	lines := strings.Join([]string{
		`{"type":"system","subtype":"init","session_id":"s"}`,
		`{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":3000,"output_tokens":1}}},"parent_tool_use_id":null}`,
		`{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_sub","usage":{"input_tokens":100,"output_tokens":1}}},"parent_tool_use_id":"toolu_1"}`,
		`{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":40}},"parent_tool_use_id":null}`,
		`{"type":"assistant","message":{"id":"msg_1","content":[{"type":"text","text":"hi"}],"usage":{"input_tokens":3000,"output_tokens":1}}}`,
		`{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7}},"parent_tool_use_id":"toolu_1"}`,
	}, "\n") + "\n"
	u := feed([]byte(lines)).ledger.Usage()
	if u.Tokens() != 3000+40+100+7 || !u.Partial {
		t.Errorf("usage %d tokens (partial %v), want 3147, partial", u.Tokens(), u.Partial)
	}
}

// A result that says less than its messages' own usage — 0 of a message
// the server billed and streamed, when the meter refused the next request;
// or leaving out an attempt whose answer was cut and sent again — does not
// replace them: the messages' figures stand. One that says at least as
// much stands as the turn's total.
func TestAResultDoesNotUnsayItsMessages(t *testing.T) {
	t.Parallel()
	msg := `{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_1","usage":{"input_tokens":2000,"output_tokens":1}}},"parent_tool_use_id":null}` + "\n" +
		`{"type":"stream_event","event":{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":20}},"parent_tool_use_id":null}` + "\n"
	for _, c := range []struct {
		name   string
		result string
		want   int64
	}{
		{"error saying 0", `{"type":"result","subtype":"success","is_error":true,"result":"API Error: 400","usage":{"input_tokens":0,"output_tokens":0}}`, 2020},
		{"error saying more", `{"type":"result","subtype":"success","is_error":true,"result":"API Error: 400","usage":{"input_tokens":2000,"output_tokens":30}}`, 2030},
		{"success saying less", `{"type":"result","subtype":"success","is_error":false,"result":"ok","stop_reason":"end_turn","usage":{"input_tokens":1500,"output_tokens":20}}`, 2020},
		{"success saying more", `{"type":"result","subtype":"success","is_error":false,"result":"ok","stop_reason":"end_turn","usage":{"input_tokens":2000,"output_tokens":25,"cache_read_input_tokens":100}}`, 2125},
	} {
		u := feed([]byte(msg + c.result + "\n")).ledger.Usage()
		if u.Tokens() != c.want || u.Partial {
			t.Errorf("%s: %d tokens (partial %v), want %d, final", c.name, u.Tokens(), u.Partial, c.want)
		}
	}
}
