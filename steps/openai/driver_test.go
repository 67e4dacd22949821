package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/steps/transcript"
)

const fakeKey = "sk-test-DO-NOT-LEAK-4f3a9c"

// turn returns a turn of an openai agent against the server, with its key
// in the environment variable FLOW_TEST_OPENAI_KEY.
func turn(t *testing.T, s *modelserver.Server) *engine.Turn {
	t.Helper()
	return clitest.Turn(t, &flows.Agent{Name: "reviewer", Driver: "openai", BaseURL: s.URL(), APIKeyEnv: "FLOW_TEST_OPENAI_KEY",
		Instructions: "You review code."}, "Review this.")
}

func TestPlainTurn(t *testing.T) {
	t.Setenv("FLOW_TEST_OPENAI_KEY", fakeKey)
	s := modelserver.Start(t, modelserver.Reply{Text: "Looks good to me.", Input: 42, Output: 5})
	tn := turn(t, s)
	var prog []engine.Progress
	tn.Progress = func(p engine.Progress) { prog = append(prog, p) }
	res, err := New(Options{}).Turn(context.Background(), tn)
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.Completed || res.Output != "Looks good to me." || len(res.Diagnostics) != 0 {
		t.Fatalf("Turn = %s %q %q", res.Status, res.Output, res.Diagnostics)
	}
	u := res.Usage
	if u.Input == nil || *u.Input != 42 || *u.Output != 5 || u.Cost != nil || *u.Turns != 1 {
		t.Errorf("usage = %+v", u)
	}
	if res.Session == "" || res.Transcript != filepath.Join(tn.Home, "reviewer.jsonl") {
		t.Errorf("session %q transcript %q", res.Session, res.Transcript)
	}
	if len(prog) < 2 || prog[len(prog)-1].Activity != "writing" || prog[len(prog)-1].Tokens == 0 {
		t.Errorf("progress = %+v", prog)
	}

	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/chat/completions" || reqs[0].Header.Get("Authorization") != "Bearer "+fakeKey {
		t.Fatalf("requests = %+v", reqs)
	}
	var body struct {
		Model         string
		Stream        bool
		StreamOptions map[string]bool `json:"stream_options"`
		Messages      []message
		Format        any `json:"response_format"`
	}
	if err := json.Unmarshal(reqs[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	want := []message{{Role: "system", Content: "You review code."}, {Role: "user", Content: "Review this."}}
	if body.Model != "test-model" || !body.Stream || !body.StreamOptions["include_usage"] || fmt.Sprint(body.Messages) != fmt.Sprint(want) || body.Format != nil {
		t.Errorf("request = %+v", body)
	}

	turns, err := transcript.Turns(res.Transcript)
	if err != nil || len(turns) != 1 || turns[0].Answer != "Looks good to me." {
		t.Errorf("transcript turns = %+v, %v", turns, err)
	}
	if _, err := os.Stat(filepath.Join(tn.Home, "reviewer.html")); err != nil {
		t.Error(err)
	}
	clitest.NoKey(t, tn.Home, fakeKey)
}

func TestNoKey(t *testing.T) {
	t.Setenv("FLOW_TEST_OPENAI_KEY", "")
	s := modelserver.Start(t, modelserver.Reply{Text: "fine"})
	res, err := New(Options{}).Turn(context.Background(), turn(t, s))
	if err != nil || res.Status != engine.Completed {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	if h := s.Requests()[0].Header.Get("Authorization"); h != "" {
		t.Errorf("Authorization %q sent without a key", h)
	}
}

func TestTypedOutput(t *testing.T) {
	t.Parallel()
	s := modelserver.Start(t, modelserver.Reply{Text: `{"approved":true,"remarks":[]}`})
	tn := turn(t, s)
	tn.OutputSchema = []byte(`{"type":"object","properties":{"approved":{"type":"boolean"},"remarks":{"type":"array","items":{"type":"string"}}},"required":["approved","remarks"],"additionalProperties":false}`)
	res, err := New(Options{}).Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed || res.Output != `{"approved":true,"remarks":[]}` {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	var body struct {
		Format struct {
			Type   string
			Schema struct {
				Name   string
				Strict bool
				Schema map[string]any
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if err := json.Unmarshal(s.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	f := body.Format
	if f.Type != "json_schema" || f.Schema.Name != "output" || !f.Schema.Strict || f.Schema.Schema["type"] != "object" {
		t.Errorf("response_format = %+v", f)
	}
}

func TestResponseFormat(t *testing.T) {
	t.Parallel()
	tests := []struct {
		schema string
		want   string // "none", "strict" or "loose"
	}{
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"],"additionalProperties":false}`, "strict"},
		{`{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"],"additionalProperties":false}`, "loose"},
		{`{"type":"object","properties":{"a":{}},"required":["a"],"additionalProperties":false}`, "loose"},
		{`{"type":"object","properties":{"a":{"type":"array","items":{"type":"object","properties":{},"required":[],"additionalProperties":false}}},"required":["a"],"additionalProperties":false}`, "strict"},
		{`{"type":"array","items":{"type":"string"}}`, "none"},
		{`{"type":"string"}`, "none"},
	}
	for _, tt := range tests {
		rf := responseFormat([]byte(tt.schema))
		got := "none"
		if rf != nil {
			got = "loose"
			if rf["json_schema"].(map[string]any)["strict"] == true {
				got = "strict"
			}
		}
		if got != tt.want {
			t.Errorf("%s: %s, want %s", tt.schema, got, tt.want)
		}
	}
}

func TestFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		reply modelserver.Reply
		diag  string
	}{
		{"server error", modelserver.Reply{Status: 500}, "the server answered 500 Internal Server Error: modelserver: scripted Internal Server Error"},
		{"length", modelserver.Reply{Text: "a long", Finish: "length"}, "hit its length limit"},
		{"tool call", modelserver.Reply{ToolCall: &modelserver.ToolCall{Name: "bash", Arguments: `{}`}}, "still requesting tools (bash)"},
		{"blank", modelserver.Reply{Text: "  "}, "no answer"},
		{"cut", modelserver.Reply{Text: "partial", Cut: true}, "the stream ended without [DONE]; the stream gave no finish reason"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := modelserver.Start(t, tt.reply)
			start := time.Now()
			res, err := New(Options{}).Turn(context.Background(), turn(t, s))
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
			if got := strings.Join(res.Diagnostics, "; "); res.Status != engine.Failed || !strings.Contains(got, tt.diag) {
				t.Errorf("Turn = %s %q, want failed with %q", res.Status, got, tt.diag)
			}
			if res.Session != "" {
				t.Errorf("a failed turn returned session %q", res.Session)
			}
		})
	}
}

func TestNoModel(t *testing.T) {
	t.Parallel()
	s := modelserver.Start(t)
	tn := turn(t, s)
	tn.Model = ""
	res, err := New(Options{}).Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Failed || !strings.Contains(res.Diagnostics[0], "no model") || len(s.Requests()) != 0 {
		t.Errorf("Turn = %+v, %v", res, err)
	}
	tn.Agent.Model = "agent-model"
	if res, err = New(Options{}).Turn(context.Background(), tn); err != nil || res.Status != engine.Completed {
		t.Errorf("Turn with the agent's model = %+v, %v", res, err)
	}
}

func TestCancelSlowStream(t *testing.T) {
	t.Parallel()
	s := modelserver.Start(t, modelserver.Reply{Text: "a slow answer that takes a long time", ChunkDelay: time.Hour})
	ctx, cancel := context.WithCancelCause(context.Background())
	tn := turn(t, s)
	time.AfterFunc(300*time.Millisecond, func() { cancel(errors.New("stopped by the test")) })
	start := time.Now()
	res, err := New(Options{}).Turn(ctx, tn)
	if err == nil || err.Error() != "stopped by the test" || res.Status != engine.Aborted {
		t.Errorf("Turn = %+v, %v; want aborted with the cause", res, err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("cancel took %v", d)
	}
}

func TestMemory(t *testing.T) {
	t.Parallel()
	s := modelserver.Start(t, modelserver.Reply{Text: "First answer."}, modelserver.Reply{Text: "Second answer."})
	tn := turn(t, s)
	d := New(Options{})
	res, err := d.Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed {
		t.Fatal(res, err)
	}
	tn2 := *tn
	tn2.Prompt, tn2.Session = "Again.", res.Session
	res2, err := d.Turn(context.Background(), &tn2)
	if err != nil || res2.Status != engine.Completed || res2.Session != res.Session {
		t.Fatalf("second turn = %+v, %v", res2, err)
	}
	var body struct{ Messages []message }
	if err := json.Unmarshal(s.Requests()[1].Body, &body); err != nil {
		t.Fatal(err)
	}
	want := []message{{Role: "system", Content: "You review code."}, {Role: "user", Content: "Review this."}, {Role: "assistant", Content: "First answer."}, {Role: "user", Content: "Again."}}
	if fmt.Sprint(body.Messages) != fmt.Sprint(want) {
		t.Errorf("second request messages = %v", body.Messages)
	}
	// An unknown session fails instead of forgetting.
	tn2.Session = "chat-unknown"
	res3, err := d.Turn(context.Background(), &tn2)
	if err != nil || res3.Status != engine.Failed || !strings.Contains(res3.Diagnostics[0], "continuing session chat-unknown") {
		t.Errorf("unknown session = %+v, %v", res3, err)
	}
	if turns, _ := transcript.Turns(res.Transcript); len(turns) != 3 {
		t.Errorf("%d turns in the transcript, want 3", len(turns))
	}
}

func TestChatURL(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ conf, agent, want string }{
		{DefaultBaseURL, "", "https://api.openai.com/v1/chat/completions"},
		{DefaultBaseURL, "http://127.0.0.1:11434", "http://127.0.0.1:11434/v1/chat/completions"},
		{DefaultBaseURL, "https://openrouter.ai/api/v1/", "https://openrouter.ai/api/v1/chat/completions"},
		{"http://local:8000/v1", "", "http://local:8000/v1/chat/completions"},
	} {
		if got := chatURL(tt.conf, tt.agent); got != tt.want {
			t.Errorf("chatURL(%q, %q) = %q, want %q", tt.conf, tt.agent, got, tt.want)
		}
	}
}
