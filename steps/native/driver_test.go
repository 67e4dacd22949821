package native

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/modelserver"
)

// nativeTurn is a turn of a native agent against base, working in a
// directory of its own, with its calls journaled into *calls.
func nativeTurn(t *testing.T, base string, a flows.Agent, calls *[]record.ToolCall) *engine.Turn {
	t.Helper()
	a.Name, a.Driver, a.BaseURL, a.Model = "coder", "native", base, "test-model"
	tn := clitest.Turn(t, &a, "Do the task.")
	tn.WorkDir = t.TempDir()
	tn.Tools = &record.ToolLog{Record: func(c record.ToolCall) error { *calls = append(*calls, c); return nil }}
	return tn
}

// TestOllamaNumCtx: a server that answers GET /api/version is Ollama, and
// every request to it carries options.num_ctx; another server's do not.
func TestOllamaNumCtx(t *testing.T) {
	s := modelserver.Start(t, modelserver.Reply{ToolCall: &modelserver.ToolCall{Name: "read", Arguments: `{"path": "nothing"}`}}, modelserver.Reply{Text: "done"})
	target, _ := url.Parse(s.URL())
	proxy := httputil.NewSingleHostReverseProxy(target)
	ollama := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/version" {
			_, _ = w.Write([]byte(`{"version": "0.12.0"}`))
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer ollama.Close()
	var calls []record.ToolCall
	res, err := New(Options{}).Turn(context.Background(), nativeTurn(t, ollama.URL, flows.Agent{}, &calls))
	if err != nil || res.Status != engine.Completed {
		t.Fatalf("Turn: %v %s %q", err, res.Status, res.Diagnostics)
	}
	n := 0
	for _, r := range s.Requests() {
		if r.Path != "/v1/chat/completions" {
			continue
		}
		n++
		opts, _ := r.JSON()["options"].(map[string]any)
		if ctx, _ := opts["num_ctx"].(float64); ctx < 16384 {
			t.Errorf("request %d carries options %v, want num_ctx of at least 16384", n, opts)
		}
	}
	if n != 2 || len(calls) != 1 || !calls[0].Error {
		t.Errorf("%d requests, calls %+v", n, calls)
	}

	plain := modelserver.Start(t, modelserver.Reply{Text: "done"})
	if _, err := New(Options{}).Turn(context.Background(), nativeTurn(t, plain.URL(), flows.Agent{}, &calls)); err != nil {
		t.Fatal(err)
	}
	if _, ok := plain.Requests()[len(plain.Requests())-1].JSON()["options"]; ok {
		t.Error("a request to a server that is not Ollama carries options")
	}
}

// TestMaxSteps: a model that keeps calling tools is stopped after
// max_steps requests, and the turn fails saying so.
func TestMaxSteps(t *testing.T) {
	s := modelserver.Start(t, modelserver.Reply{ToolCall: &modelserver.ToolCall{Name: "read", Arguments: `{"path": "x"}`}})
	var calls []record.ToolCall
	res, err := New(Options{}).Turn(context.Background(), nativeTurn(t, s.URL(), flows.Agent{MaxSteps: 3}, &calls))
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.Failed || !strings.Contains(strings.Join(res.Diagnostics, "; "), "max_steps 3") {
		t.Errorf("Turn = %s %q", res.Status, res.Diagnostics)
	}
	if len(s.Bills()) != 3 || len(calls) != 3 {
		t.Errorf("%d requests and %d calls, want 3 of each", len(s.Bills()), len(calls))
	}
}

// TestBudgetBeforeEachRequest: the turn's live count is reported before
// each request, so a budget crossed by the answers so far stops the turn
// before the next request goes out.
func TestBudgetBeforeEachRequest(t *testing.T) {
	s := modelserver.Start(t, modelserver.Reply{ToolCall: &modelserver.ToolCall{Name: "read", Arguments: `{"path": "x"}`}, Input: 500, Output: 10})
	var calls []record.ToolCall
	tn := nativeTurn(t, s.URL(), flows.Agent{}, &calls)
	ctx, stop := context.WithCancelCause(context.Background())
	defer stop(nil)
	tn.Progress = func(p engine.Progress) {
		if p.Tokens > 1000 { // what the local LeafRunner does with Turn.Watch
			stop(engine.ErrBudget)
		}
	}
	res, err := New(Options{}).Turn(ctx, tn)
	if !errors.Is(err, engine.ErrBudget) || res.Status != engine.Aborted {
		t.Fatalf("Turn = %v, %s %q", err, res.Status, res.Diagnostics)
	}
	if n := len(s.Bills()); n != 2 {
		t.Errorf("%d requests went out; the budget was crossed after the second", n)
	}
	if u := res.Usage; u.Tokens() != 1020 || *u.Turns != 2 {
		t.Errorf("usage %+v, want the two answers' 1020 tokens", u)
	}
}

// TestLeakedToolCall: a model that writes its call as text under the
// native protocol has it made, and the turn goes on by the text protocol.
func TestLeakedToolCall(t *testing.T) {
	s := modelserver.Start(t, modelserver.Reply{Text: "{\"name\": \"read\", \"arguments\": {\"path\": \"missing.txt\"}}"}, modelserver.Reply{Text: "It is missing."})
	var calls []record.ToolCall
	res, err := New(Options{}).Turn(context.Background(), nativeTurn(t, s.URL(), flows.Agent{}, &calls))
	if err != nil || res.Status != engine.Completed || res.Output != "It is missing." {
		t.Fatalf("Turn: %v %s %q %q", err, res.Status, res.Output, res.Diagnostics)
	}
	if len(calls) != 1 || calls[0].Name != "read" || calls[0].Protocol != ProtocolText || !calls[0].Error {
		t.Errorf("calls %+v", calls)
	}
	reqs := s.Requests()
	if _, ok := reqs[len(reqs)-1].JSON()["tools"]; ok {
		t.Error("the request after the switch still offers tools")
	}
	if !strings.Contains(string(reqs[len(reqs)-1].Body), "Result of read (an error)") {
		t.Errorf("the result is not the next user message:\n%s", reqs[len(reqs)-1].Body)
	}
}
