package meter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"

	"github.com/flowrun/flow/steps/usage"
)

// Meter is one turn's metering proxy: a listener on 127.0.0.1 that the
// agent CLI's provider points at, which forwards every request to the
// real server and reads each response's usage as it passes, before the
// CLI reads those bytes. It is one per turn: Start opens it, Close ends
// it with the turn. The key header passes through untouched and is never
// logged.
type Meter struct {
	target *url.URL // the real server's origin (scheme and host)
	url    string   // the base URL the CLI is given: the listener, and the real base URL's path
	srv    *http.Server
	tr     *http.Transport
	done   chan struct{} // closed when Serve returned
	// ctx is every request's: it ends at Close, and with it every request
	// still forwarded.
	ctx    context.Context
	cancel context.CancelFunc

	report  func(Report)
	affords func(next int64) bool // may one more request of about next tokens go out; nil: always

	mu      sync.Mutex
	n       int    // requests forwarded
	largest int64  // the most tokens one request of the turn was billed
	refused string // why a request was refused, "" while none was
	failed  []string
}

// Report is one request's usage, as the meter read it from the answer.
type Report struct {
	Request int    // the request's number in the turn, from 1
	ID      string // the answer's own id (a response's, a message's), "" when it gave none
	Call    usage.Call
}

// maxJSONBody bounds what the meter holds of a response that is not a
// stream, to read its usage at the end; a longer one passes unread.
const maxJSONBody = 8 << 20

// Start opens a meter in front of base (an http or https base URL), for
// the turn whose context is ctx (its values; the meter ends at Close,
// once the CLI is gone).
// report counts each request's usage, on the goroutine that serves it;
// affords, when not nil, is asked before each request with the largest
// request's tokens so far (0 before the first).
func Start(ctx context.Context, base string, report func(Report), affords func(next int64) bool) (*Meter, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the base URL %q is not an http(s) URL", base)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("opening the usage meter: %w", err)
	}
	m := &Meter{
		target: &url.URL{Scheme: u.Scheme, Host: u.Host, User: u.User},
		url:    "http://" + ln.Addr().String() + u.EscapedPath(),
		tr:     http.DefaultTransport.(*http.Transport).Clone(),
		done:   make(chan struct{}),
		report: report, affords: affords,
	}
	m.ctx, m.cancel = context.WithCancel(context.WithoutCancel(ctx))
	quiet := log.New(io.Discard, "", 0) // nothing of a request, its key least of all, is logged
	proxy := &httputil.ReverseProxy{
		Rewrite:        func(pr *httputil.ProxyRequest) { pr.SetURL(m.target); pr.Out.Host = u.Host },
		Transport:      m.tr,
		FlushInterval:  -1, // every write goes on at once: streams pass unbuffered
		ErrorLog:       quiet,
		ModifyResponse: m.watch,
		ErrorHandler:   m.proxyError,
	}
	m.srv = &http.Server{Handler: m.handler(proxy), ErrorLog: quiet, ReadHeaderTimeout: time.Minute,
		BaseContext: func(net.Listener) context.Context { return m.ctx }}
	go func() {
		defer close(m.done)
		_ = m.srv.Serve(ln) // ends with close
	}()
	return m, nil
}

// URL is the base URL the CLI is given instead of the server's.
func (m *Meter) URL() string { return m.url }

// Close ends the meter with its turn: the listener, every open
// connection, and the connections kept to the server.
func (m *Meter) Close() {
	m.cancel()
	_ = m.srv.Close()
	<-m.done
	m.tr.CloseIdleConnections()
}

// Refusal is why the meter refused a request, "" when it refused none
// (and on a nil Meter).
func (m *Meter) Refusal() string {
	if m == nil {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refused
}

// Problems are the meter's own failures to reach the server (none on a
// nil Meter).
func (m *Meter) Problems() []string {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.failed...)
}

// handler admits each generation request (a POST) before it is
// forwarded: one the budget cannot afford is answered with an error
// that ends Codex's turn, and never reaches the server.
func (m *Meter) handler(proxy http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && m.ctx.Err() != nil {
			// The turn has ended: nothing more is sent for it.
			http.Error(w, "flow: the turn has ended", http.StatusServiceUnavailable)
			return
		}
		if err := holdBody(w, r); err != nil {
			status := http.StatusBadRequest
			if tooLong := new(http.MaxBytesError); errors.As(err, &tooLong) {
				status = http.StatusRequestEntityTooLarge
			}
			http.Error(w, "flow: reading the request: "+err.Error(), status)
			return
		}
		if r.Method == http.MethodPost {
			id, why := m.admit()
			if why != "" {
				writeRefusal(w, why)
				return
			}
			r = r.WithContext(context.WithValue(r.Context(), requestID{}, id))
		}
		proxy.ServeHTTP(w, r)
	})
}

// maxRequestBody bounds a request's body, which the meter holds whole
// before forwarding it; the APIs' own bounds are lower.
const maxRequestBody = 64 << 20

// holdBody reads r's body whole and gives it back as one held in memory.
// The server and the forwarding must never read one body at once: when
// the answer's headers go out, the server reads what it takes to be the
// rest of the request, while the forwarding may still be making its last
// read of it, which then fails; the connection to the server is dropped
// and the answer cut mid-stream (the CLI sees ECONNRESET, and the server
// has billed a request whose usage the meter never read). A held body is
// also one the forwarding may send again on a fresh connection.
func holdBody(w http.ResponseWriter, r *http.Request) error {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		return err
	}
	r.Body, r.ContentLength = io.NopCloser(bytes.NewReader(b)), int64(len(b))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return nil
}

// requestID keys a forwarded request's number in its context.
type requestID struct{}

// admit numbers a request, or says why the budget refuses it.
func (m *Meter) admit() (n int, refused string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refused == "" && m.affords != nil && !m.affords(m.largest) {
		m.refused = "flow: the turn's budget has too little left for another request; it was not sent"
		if m.largest > 0 {
			m.refused = fmt.Sprintf("flow: the turn's budget has less left than its largest request so far (%d tokens); the next was not sent", m.largest)
		}
	}
	if m.refused != "" {
		return 0, m.refused
	}
	m.n++
	return m.n, ""
}

// writeRefusal answers a refused request as a server answers a request
// it will not serve, in a shape both the OpenAI and the Anthropic APIs
// use: the CLIs end their turn on it, without retrying.
func writeRefusal(w http.ResponseWriter, why string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{
		"message": why, "type": "invalid_request_error", "code": "flow_budget_exhausted", "param": nil}})
}

func (m *Meter) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	if !errors.Is(err, context.Canceled) {
		m.mu.Lock()
		m.failed = append(m.failed, fmt.Sprintf("the usage meter could not reach %s: %v", m.target.Host, err))
		m.mu.Unlock()
	}
	w.WriteHeader(http.StatusBadGateway)
}

// watch wraps a response's body so that its usage is read as it passes.
func (m *Meter) watch(resp *http.Response) error {
	n, _ := resp.Request.Context().Value(requestID{}).(int)
	resp.Body = &usageReader{body: resp.Body, seen: func(id string, c usage.Call) { m.seen(Report{Request: n, ID: id, Call: c}) }}
	return nil
}

// seen counts one request's usage, before the CLI reads the bytes that
// carry it.
func (m *Meter) seen(r Report) {
	c := r.Call
	var n int64
	for _, p := range []*int64{c.Input, c.Output, c.CacheRead, c.CacheWrite} {
		if p != nil && *p > 0 {
			n += *p
		}
	}
	m.mu.Lock()
	m.largest = max(m.largest, n)
	m.mu.Unlock()
	m.report(r)
}
