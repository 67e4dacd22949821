package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/delegatetest"
)

// wire is a raw client of the server over its line transport: what a
// client that is not the SDK sends and reads.
type wire struct {
	t   *testing.T
	in  *io.PipeWriter
	out *bufio.Scanner
}

func startWire(t *testing.T, cfg Config) *wire {
	t.Helper()
	s, err := New(cfg, "test")
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, &lineTransport{r: inR, w: outW}) }()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		outR.Close()
		<-done //nolint:errcheck // waits for the goroutine to end; its error is not this check
	})
	w := &wire{t: t, in: inW, out: bufio.NewScanner(outR)}
	w.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if m := w.next(); m["id"] != float64(1) || m["result"] == nil {
		t.Fatalf("initialize: %v", m)
	}
	w.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return w
}

func (w *wire) send(line string) {
	w.t.Helper()
	if _, err := io.WriteString(w.in, line+"\n"); err != nil {
		w.t.Fatal(err)
	}
}

func (w *wire) next() map[string]any {
	w.t.Helper()
	if !w.out.Scan() {
		w.t.Fatalf("the server wrote nothing more: %v", w.out.Err())
	}
	var m map[string]any
	if err := json.Unmarshal(w.out.Bytes(), &m); err != nil {
		w.t.Fatalf("the server wrote %q: %v", w.out.Text(), err)
	}
	return m
}

// TestMCPMalformedLineIsAnError: a line that is not JSON is answered with a
// -32700 JSON-RPC error of id null, and the server goes on serving.
func TestMCPMalformedLineIsAnError(t *testing.T) {
	t.Parallel()
	w := startWire(t, Config{Socket: t.TempDir() + "/none.sock", Token: "t", Agents: []string{"scout"}})
	w.send(`this is not json {`)
	m := w.next()
	e, _ := m["error"].(map[string]any)
	if e == nil || e["code"] != float64(-32700) || m["id"] != nil || m["jsonrpc"] != "2.0" {
		t.Fatalf("a non-JSON line: %v, want a -32700 error of id null", m)
	}
	w.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if m := w.next(); m["id"] != float64(2) || m["result"] == nil {
		t.Fatalf("tools/list after a malformed line: %v, want its result", m)
	}
}

// TestMCPCancelledCallGetsNoResponse: a tools/call the client cancels
// (notifications/cancelled) gets no response; the next request does.
func TestMCPCancelledCallGetsNoResponse(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	fake := delegatetest.Start(t, func(r engine.DelegateRequest) engine.DelegateReply {
		started <- struct{}{}
		<-release
		return engine.DelegateReply{Answer: "too late"}
	})
	t.Cleanup(func() { close(release) })
	w := startWire(t, Config{Socket: fake.Socket(), Token: "tok", Agents: []string{"scout"}})
	w.send(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"delegate","arguments":{"agent":"scout","task":"slow"}}}`)
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the call never reached the socket")
	}
	w.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"the user stopped it"}}`)
	time.Sleep(300 * time.Millisecond) // time for a response, were one sent
	w.send(`{"jsonrpc":"2.0","id":8,"method":"ping"}`)
	for {
		m := w.next()
		if m["id"] == float64(7) {
			t.Fatalf("the cancelled call got a response: %v", m)
		}
		if m["id"] == float64(8) {
			break
		}
		if !strings.HasPrefix(m["method"].(string), "notifications/") {
			t.Fatalf("unexpected message %v", m)
		}
	}
}
