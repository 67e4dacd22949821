package codex

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/steps/usage"
)

// counted collects what a meter reports, by request id.
type counted struct {
	mu    sync.Mutex
	calls map[string]usage.Call
}

func (c *counted) report(id string, u usage.Call) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]usage.Call{}
	}
	c.calls[id] = u
}

func (c *counted) tokens() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	var n int64
	for _, u := range c.calls {
		for _, p := range []*int64{u.Input, u.Output, u.CacheRead, u.CacheWrite} {
			if p != nil {
				n += *p
			}
		}
	}
	return n
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+fakeKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// The meter passes each API's answer on unchanged and counts what the
// server billed for it: a Responses stream, a Chat Completions stream
// (its usage chunk), and a body that is no stream; the key reaches the
// server.
func TestMeterCountsEachRequest(t *testing.T) {
	t.Parallel()
	s := modelserver.Start(t, modelserver.Reply{Text: "one", Input: 1000, Output: 11, CacheRead: 400},
		modelserver.Reply{Text: "two", Input: 2000, Output: 22}, modelserver.Reply{Text: "three", Input: 3000, Output: 33})
	var c counted
	m, err := startMeter(s.URL()+"/v1", c.report, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	if !strings.HasSuffix(m.base, "/v1") || !strings.HasPrefix(m.base, "http://127.0.0.1:") {
		t.Errorf("the meter's base URL is %s", m.base)
	}
	for i, r := range []struct{ path, body, want string }{
		{"/responses", `{"model":"m","stream":true,"input":"hi"}`, `"type":"response.completed"`},
		{"/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, "data: [DONE]"},
		{"/responses", `{"model":"m","input":"hi"}`, `"object":"response"`},
	} {
		status, body := post(t, m.base+r.path, r.body)
		if status != http.StatusOK || !strings.Contains(body, r.want) {
			t.Errorf("request %d: %d %s", i+1, status, body)
		}
		if got := c.tokens(); got != s.Billed() {
			t.Errorf("after request %d the meter counted %d tokens, the server billed %d", i+1, got, s.Billed())
		}
	}
	if u := c.calls["request 1"]; u.CacheRead == nil || *u.CacheRead != 400 || *u.Input != 600 {
		t.Errorf("request 1: %+v, want 400 read from the cache and 600 more", u)
	}
	for _, r := range s.Requests() {
		if r.Header.Get("Authorization") != "Bearer "+fakeKey {
			t.Errorf("%s reached the server without its key", r.Path)
		}
	}
}

// A request the budget cannot afford is answered by the meter itself,
// with an error, and never reaches the server; affords is asked with the
// largest request's tokens so far.
func TestMeterRefusesWhatTheBudgetCannotAfford(t *testing.T) {
	t.Parallel()
	s := modelserver.Start(t, modelserver.Reply{Text: "one", Input: 1000, Output: 10})
	var c counted
	var asked []int64
	m, err := startMeter(s.URL(), c.report, func(next int64) bool {
		asked = append(asked, next)
		return next == 0
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	if status, _ := post(t, m.base+"/v1/responses", `{"model":"m","stream":true,"input":"hi"}`); status != http.StatusOK {
		t.Fatalf("the first request: %d", status)
	}
	status, body := post(t, m.base+"/v1/responses", `{"model":"m","stream":true,"input":"again"}`)
	if status != http.StatusBadRequest || !strings.Contains(body, "flow_budget_exhausted") {
		t.Errorf("the second request: %d %s, want the meter's refusal", status, body)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("the server got %d requests, want 1", n)
	}
	if m.refusal() == "" || fmt.Sprint(asked) != "[0 1010]" {
		t.Errorf("refusal %q, asked %v", m.refusal(), asked)
	}
	if strings.Contains(m.refusal()+strings.Join(m.problems(), ""), fakeKey) {
		t.Error("the key is in what the meter says")
	}
}

// A server the meter cannot reach is a problem the turn reports, without
// the key.
func TestMeterUnreachable(t *testing.T) {
	t.Parallel()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	var c counted
	m, err := startMeter(gone.URL, c.report, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.close()
	if status, _ := post(t, m.base+"/v1/responses", `{}`); status != http.StatusBadGateway {
		t.Errorf("status %d, want 502", status)
	}
	if p := m.problems(); len(p) != 1 || strings.Contains(p[0], fakeKey) {
		t.Errorf("problems = %q", p)
	}
	if _, err := startMeter("ftp://example.com", c.report, nil); err == nil {
		t.Error("a base URL that is no http(s) URL was taken")
	}
}

// On the real Codex: a turn whose budget affords its first request only
// has its second refused by the meter, before it reaches the server; the
// turn fails ErrBudget and records what the server billed.
func TestCodexMeterRefusesOverBudget(t *testing.T) {
	bin := clitest.Binary(t, "codex")
	s := modelserver.Start(t,
		modelserver.Reply{Text: "Listing.", ToolCall: &modelserver.ToolCall{Name: "exec_command", Arguments: `{"cmd":"ls"}`}, Input: 2000, Output: 20},
		modelserver.Reply{Text: "There is hello.txt.", Input: 2100, Output: 8},
	)
	tn := turn(t, s)
	var live []int64
	tn.Affords = func(spent, next int64) bool {
		live = append(live, spent)
		return spent+next <= 3000
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := New(Options{Binary: bin, CodexHome: t.TempDir()}).Turn(ctx, tn)
	if !errors.Is(err, engine.ErrBudget) || res == nil || res.Status != engine.Failed {
		t.Fatalf("Turn = %+v, %v; want a failed turn and ErrBudget", res, err)
	}
	if n := len(s.Bills()); n != 1 {
		t.Errorf("the server billed %d requests, want 1", n)
	}
	if got := res.Usage.Tokens(); got != s.Billed() || got != 2020 {
		t.Errorf("the turn recorded %d tokens, the server billed %d", got, s.Billed())
	}
	if fmt.Sprint(live) != "[0 2020]" {
		t.Errorf("affords was asked with %v spent, want [0 2020]", live)
	}
	if !strings.Contains(strings.Join(res.Diagnostics, "\n"), "was not sent") {
		t.Errorf("diagnostics %q do not say a request was refused", res.Diagnostics)
	}
	clitest.NoKey(t, tn.Home, fakeKey)
}

// BenchmarkMeter: a streamed answer of 200 events read directly from the
// server, and through the meter; the difference is the meter's cost per
// request.
func BenchmarkMeter(b *testing.B) {
	chunk := `data: {"type":"response.output_text.delta","delta":"` + strings.Repeat("x", 40) + `"}` + "\n\n"
	final := `data: {"type":"response.completed","response":{"id":"r","usage":{"input_tokens":100,"output_tokens":200}}}` + "\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		f := w.(http.Flusher)
		for range 200 { // each event flushed as it is made, as a model server streams
			_, _ = io.WriteString(w, chunk)
			f.Flush()
		}
		_, _ = io.WriteString(w, final)
	}))
	defer srv.Close()
	var c counted
	m, err := startMeter(srv.URL, c.report, func(int64) bool { return true })
	if err != nil {
		b.Fatal(err)
	}
	defer m.close()
	client := &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	run := func(b *testing.B, url string) {
		for b.Loop() {
			resp, err := client.Post(url+"/v1/responses", "application/json", strings.NewReader(`{"stream":true}`))
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}
	b.Run("direct", func(b *testing.B) { run(b, srv.URL) })
	b.Run("metered", func(b *testing.B) { run(b, strings.TrimSuffix(m.base, "/")) })
	if c.tokens() == 0 {
		b.Error("the meter counted nothing")
	}
}
