package meter

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/steps/usage"
)

const fakeKey = "sk-meter-test-DO-NOT-LEAK-5e1"

// counted collects what a meter reports, by request id.
type counted struct {
	mu    sync.Mutex
	calls map[string]usage.Call // by request number
	ids   []string              // the answers' ids, as reported
}

func (c *counted) report(r Report) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.calls == nil {
		c.calls = map[string]usage.Call{}
	}
	c.calls[fmt.Sprint(r.Request)] = r.Call
	c.ids = append(c.ids, r.ID)
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
		modelserver.Reply{Text: "two", Input: 2000, Output: 22}, modelserver.Reply{Text: "three", Input: 3000, Output: 33},
		modelserver.Reply{Text: "four", Input: 4000, Output: 44, CacheRead: 1000, CacheWrite: 500},
		modelserver.Reply{Text: "five", Input: 5000, Output: 55})
	var c counted
	m, err := Start(context.Background(), s.URL()+"/v1", c.report, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if !strings.HasSuffix(m.URL(), "/v1") || !strings.HasPrefix(m.URL(), "http://127.0.0.1:") {
		t.Errorf("the meter's base URL is %s", m.URL())
	}
	for i, r := range []struct{ path, body, want string }{
		{"/responses", `{"model":"m","stream":true,"input":"hi"}`, `"type":"response.completed"`},
		{"/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, "data: [DONE]"},
		{"/responses", `{"model":"m","input":"hi"}`, `"object":"response"`},
		{"/messages", `{"model":"m","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, "message_stop"},
		{"/messages", `{"model":"m","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`, `"type":"message"`},
	} {
		status, body := post(t, m.URL()+r.path, r.body)
		if status != http.StatusOK || !strings.Contains(body, r.want) {
			t.Errorf("request %d: %d %s", i+1, status, body)
		}
		if got := c.tokens(); got != s.Billed() {
			t.Errorf("after request %d the meter counted %d tokens, the server billed %d", i+1, got, s.Billed())
		}
	}
	if u := c.calls["1"]; u.CacheRead == nil || *u.CacheRead != 400 || *u.Input != 600 {
		t.Errorf("request 1: %+v, want 400 read from the cache and 600 more", u)
	}
	if u := c.calls["4"]; u.CacheRead == nil || *u.CacheRead != 1000 || *u.CacheWrite != 500 || *u.Input != 2500 || *u.Output != 44 {
		t.Errorf("request 4: %+v, want 1000 read from the cache, 500 written, 2500 more in, 44 out", u)
	}
	if !slices.Contains(c.ids, "msg_4") || !slices.Contains(c.ids, "resp_1") {
		t.Errorf("the answers' ids reported: %q", c.ids)
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
	m, err := Start(context.Background(), s.URL(), c.report, func(next int64) bool {
		asked = append(asked, next)
		return next == 0
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if status, _ := post(t, m.URL()+"/v1/responses", `{"model":"m","stream":true,"input":"hi"}`); status != http.StatusOK {
		t.Fatalf("the first request: %d", status)
	}
	status, body := post(t, m.URL()+"/v1/responses", `{"model":"m","stream":true,"input":"again"}`)
	if status != http.StatusBadRequest || !strings.Contains(body, "flow_budget_exhausted") {
		t.Errorf("the second request: %d %s, want the meter's refusal", status, body)
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("the server got %d requests, want 1", n)
	}
	if m.Refusal() == "" || fmt.Sprint(asked) != "[0 1010]" {
		t.Errorf("refusal %q, asked %v", m.Refusal(), asked)
	}
	if strings.Contains(m.Refusal()+strings.Join(m.Problems(), ""), fakeKey) {
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
	m, err := Start(context.Background(), gone.URL, c.report, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if status, _ := post(t, m.URL()+"/v1/responses", `{}`); status != http.StatusBadGateway {
		t.Errorf("status %d, want 502", status)
	}
	if p := m.Problems(); len(p) != 1 || strings.Contains(p[0], fakeKey) {
		t.Errorf("problems = %q", p)
	}
	if _, err := Start(context.Background(), "ftp://example.com", c.report, nil); err == nil {
		t.Error("a base URL that is no http(s) URL was taken")
	}
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
	m, err := Start(context.Background(), srv.URL, c.report, func(int64) bool { return true })
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
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
	b.Run("metered", func(b *testing.B) { run(b, strings.TrimSuffix(m.URL(), "/")) })
	if c.tokens() == 0 {
		b.Error("the meter counted nothing")
	}
}

// The meter ends with its turn: a request still forwarded when it closes
// is cut (the server hears it go), and none is forwarded after.
func TestMeterEndsWithItsTurn(t *testing.T) {
	t.Parallel()
	arrived, cut := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server hears the client go
		close(arrived)
		<-r.Context().Done()
		close(cut)
	}))
	defer srv.Close()
	var c counted
	m, err := Start(context.Background(), srv.URL, c.report, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := http.Post(m.URL()+"/v1/responses", "application/json", strings.NewReader(`{}`))
		if err == nil {
			resp.Body.Close()
		}
	}()
	<-arrived
	m.Close()
	select {
	case <-cut:
	case <-time.After(10 * time.Second):
		t.Fatal("the forwarded request was not cut when the turn ended")
	}
	<-done
	if m.ctx.Err() == nil {
		t.Error("the meter's requests' context did not end")
	}
}
