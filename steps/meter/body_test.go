package meter

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The meter reads a request's body whole before it forwards any of it:
// the server and the forwarding must never read one body at once (see
// holdBody; on a busy machine the answer was cut, and Claude Code ended
// its turn on ECONNRESET after the server had billed the request).
func TestMeterHoldsABodyWholeBeforeForwarding(t *testing.T) {
	t.Parallel()
	var reached atomic.Int64 // when the server got the request's headers, in UnixNano
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Store(time.Now().UnixNano())
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"type":"message","id":"m1","usage":{"input_tokens":`+strconv.Itoa(len(b))+`,"output_tokens":1}}`)
	}))
	t.Cleanup(up.Close)
	var c counted
	m, err := Start(context.Background(), up.URL+"/v1", c.report, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)

	body, send := io.Pipe()
	var sent atomic.Int64 // when the client wrote the body's last byte
	go func() {
		_, _ = io.WriteString(send, `{"model":"m","messages":[`+strings.Repeat(" ", 32<<10))
		time.Sleep(300 * time.Millisecond)
		sent.Store(time.Now().UnixNano())
		_, _ = io.WriteString(send, `]}`)
		_ = send.Close()
	}()
	resp, err := http.Post(m.URL()+"/messages", "application/json", body)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the answer: %d, %v", resp.StatusCode, err)
	}
	if reached.Load() < sent.Load() {
		t.Errorf("the server had the request %v before the client finished its body", time.Duration(sent.Load()-reached.Load()))
	}
	if got, want := c.tokens(), int64(len(`{"model":"m","messages":[`)+32<<10+len(`]}`)+1); got != want {
		t.Errorf("metered %d tokens, want %d", got, want)
	}
}

// A body beyond what any API takes is refused, and never forwarded.
func TestMeterRefusesAnOverlongBody(t *testing.T) {
	t.Parallel()
	var reached atomic.Bool
	up := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Store(true) }))
	t.Cleanup(up.Close)
	m, err := Start(context.Background(), up.URL, func(Report) {}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	resp, err := http.Post(m.URL()+"/v1/messages", "application/json", io.LimitReader(zeros{}, maxRequestBody+1))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || reached.Load() {
		t.Errorf("status %d, forwarded %v; want 413, not forwarded", resp.StatusCode, reached.Load())
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
