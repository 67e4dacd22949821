package codex

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
	"strconv"
	"sync"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/usage"
)

// meter is a turn's metering proxy (see the package documentation, "Usage"):
// a listener on 127.0.0.1 that Codex's provider points at, which forwards
// every request to the real server and reads each response's usage as it
// passes. Codex's own stream reports usage only at turn.completed; the
// meter reports each request's as it is billed, so a turn stopped
// mid-way has counted what it spent, and a request the turn's budget
// cannot afford is refused before it is forwarded.
//
// It is one per turn: start opens it, close ends it with the turn. The
// key header passes through untouched and is never logged.
type meter struct {
	target *url.URL // the real server's origin (scheme and host)
	base   string   // the base URL Codex is given: the listener, and the real base URL's path
	srv    *http.Server
	tr     *http.Transport
	done   chan struct{} // closed when Serve returned

	report  func(id string, c usage.Call) // counts one request's usage
	affords func(next int64) bool         // may one more request of about next tokens go out; nil: always

	mu      sync.Mutex
	n       int    // requests forwarded
	largest int64  // the most tokens one request of the turn was billed
	refused string // why a request was refused, "" while none was
	failed  []string
}

// maxJSONBody bounds what the meter holds of a response that is not a
// stream, to read its usage at the end; a longer one passes unread.
const maxJSONBody = 8 << 20

// startMeter opens a meter in front of base (an http or https base URL).
// report counts each request's usage (by a request id of the meter's);
// affords, when not nil, is asked before each request with the largest
// request's tokens so far (0 before the first).
func startMeter(base string, report func(string, usage.Call), affords func(next int64) bool) (*meter, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("the base URL %q is not an http(s) URL", base)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("opening the usage meter: %w", err)
	}
	m := &meter{
		target: &url.URL{Scheme: u.Scheme, Host: u.Host, User: u.User},
		base:   "http://" + ln.Addr().String() + u.EscapedPath(),
		tr:     http.DefaultTransport.(*http.Transport).Clone(),
		done:   make(chan struct{}),
		report: report, affords: affords,
	}
	quiet := log.New(io.Discard, "", 0) // nothing of a request, its key least of all, is logged
	proxy := &httputil.ReverseProxy{
		Rewrite:        func(pr *httputil.ProxyRequest) { pr.SetURL(m.target); pr.Out.Host = u.Host },
		Transport:      m.tr,
		FlushInterval:  -1, // every write goes on at once: streams pass unbuffered
		ErrorLog:       quiet,
		ModifyResponse: m.watch,
		ErrorHandler:   m.proxyError,
	}
	m.srv = &http.Server{Handler: m.handler(proxy), ErrorLog: quiet, ReadHeaderTimeout: time.Minute}
	go func() {
		defer close(m.done)
		_ = m.srv.Serve(ln) // ends with close
	}()
	return m, nil
}

// meter opens the turn's meter in front of base: each request's usage
// goes to the stream's ledger and the turn's progress, as the stream's
// own figures do, and affords (Turn.Affords, nil for none) is asked
// before each request with what the turn spent so far.
func (s *stream) meter(base string, affords func(live, next int64) bool) (*meter, error) {
	report := func(id string, c usage.Call) {
		s.ledger.Report(id, c)
		s.progress(engine.Progress{Activity: "model replied", Tokens: s.ledger.Tokens()})
	}
	var may func(int64) bool
	if affords != nil {
		may = func(next int64) bool { return affords(s.ledger.Tokens(), next) }
	}
	return startMeter(base, report, may)
}

// close ends the meter with its turn: the listener, every open
// connection, and the connections kept to the server.
func (m *meter) close() {
	_ = m.srv.Close()
	<-m.done
	m.tr.CloseIdleConnections()
}

// refusal is why the meter refused a request, "" when it refused none.
func (m *meter) refusal() string {
	if m == nil {
		return ""
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.refused
}

// problems are the meter's own failures to reach the server.
func (m *meter) problems() []string {
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
func (m *meter) handler(proxy http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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

// requestID keys a forwarded request's id (the meter's own, unique in the
// turn) in its context, for the ledger to count each request once.
type requestID struct{}

// admit numbers a request, or says why the budget refuses it.
func (m *meter) admit() (id, refused string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.refused == "" && m.affords != nil && !m.affords(m.largest) {
		m.refused = "flow: the turn's budget has too little left for another request; it was not sent"
		if m.largest > 0 {
			m.refused = fmt.Sprintf("flow: the turn's budget has less left than its largest request so far (%d tokens); the next was not sent", m.largest)
		}
	}
	if m.refused != "" {
		return "", m.refused
	}
	m.n++
	return "request " + strconv.Itoa(m.n), ""
}

// writeRefusal answers a refused request as an OpenAI server answers a
// request it will not serve: Codex ends its turn on it, without retrying.
func writeRefusal(w http.ResponseWriter, why string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
		"message": why, "type": "invalid_request_error", "code": "flow_budget_exhausted", "param": nil}})
}

func (m *meter) proxyError(w http.ResponseWriter, r *http.Request, err error) {
	if !errors.Is(err, context.Canceled) {
		m.mu.Lock()
		m.failed = append(m.failed, fmt.Sprintf("the usage meter could not reach %s: %v", m.target.Host, err))
		m.mu.Unlock()
	}
	w.WriteHeader(http.StatusBadGateway)
}

// watch wraps a response's body so that its usage is read as it passes.
func (m *meter) watch(resp *http.Response) error {
	id, _ := resp.Request.Context().Value(requestID{}).(string)
	resp.Body = &usageReader{body: resp.Body, seen: func(c usage.Call) { m.seen(id, c) }}
	return nil
}

// seen counts one request's usage, before Codex reads the bytes that
// carry it.
func (m *meter) seen(id string, c usage.Call) {
	var n int64
	for _, p := range []*int64{c.Input, c.Output, c.CacheRead, c.CacheWrite} {
		if p != nil && *p > 0 {
			n += *p
		}
	}
	m.mu.Lock()
	m.largest = max(m.largest, n)
	m.mu.Unlock()
	m.report(id, c)
}

// usageReader passes a response body on as it is read, and reads the
// usage in it: from each `data:` line of a stream (the Responses API's
// final response.completed, .incomplete or .failed event; a Chat
// Completions stream's usage chunk), or from a whole JSON body at its end.
type usageReader struct {
	body  io.ReadCloser
	seen  func(usage.Call)
	line  []byte // the incomplete line read so far
	whole bytes.Buffer
	long  bool // the line or body outgrew maxJSONBody: not read
}

func (r *usageReader) Read(p []byte) (int, error) {
	n, err := r.body.Read(p)
	r.scan(p[:n])
	if err == io.EOF {
		r.end()
	}
	return n, err
}

func (r *usageReader) Close() error { return r.body.Close() }

func (r *usageReader) scan(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			r.keep(b)
			return
		}
		r.keep(b[:i])
		r.lineDone()
		b = b[i+1:]
	}
}

func (r *usageReader) keep(b []byte) {
	if r.long {
		return
	}
	if len(r.line)+len(b) > maxJSONBody {
		r.long, r.line = true, nil
		return
	}
	r.line = append(r.line, b...)
}

// lineDone reads a whole line: a stream's data line, or a line of a JSON
// body, kept for the end.
func (r *usageReader) lineDone() {
	line := bytes.TrimSpace(r.line)
	r.line = r.line[:0]
	if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
		r.payload(bytes.TrimSpace(data))
		return
	}
	if !r.long && r.whole.Len()+len(line) <= maxJSONBody {
		r.whole.Write(line)
	}
}

// end reads a body that was no stream, whole.
func (r *usageReader) end() {
	if len(r.line) > 0 {
		r.lineDone()
	}
	if r.whole.Len() > 0 {
		r.payload(r.whole.Bytes())
		r.whole.Reset()
	}
}

// wireUsage is a usage object of the Responses API (input_tokens, …) or
// of Chat Completions (prompt_tokens, …).
type wireUsage struct {
	Input        *int64 `json:"input_tokens"`
	Output       *int64 `json:"output_tokens"`
	Prompt       *int64 `json:"prompt_tokens"`
	Completion   *int64 `json:"completion_tokens"`
	InputDetails *struct {
		Cached *int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	PromptDetails *struct {
		Cached *int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// payload reads the usage in one JSON payload, if it holds one.
func (r *usageReader) payload(b []byte) {
	if len(b) == 0 || b[0] != '{' {
		return
	}
	var p struct {
		Usage    *wireUsage `json:"usage"`
		Response *struct {
			Usage *wireUsage `json:"usage"`
		} `json:"response"`
	}
	if json.Unmarshal(b, &p) != nil {
		return
	}
	u := p.Usage
	if u == nil && p.Response != nil {
		u = p.Response.Usage
	}
	if u == nil {
		return
	}
	if u.Input != nil || u.Output != nil {
		var cached *int64
		if u.InputDetails != nil {
			cached = u.InputDetails.Cached
		}
		r.seen(usage.OpenAI(u.Input, cached, u.Output))
		return
	}
	if u.Prompt != nil || u.Completion != nil {
		var cached *int64
		if u.PromptDetails != nil {
			cached = u.PromptDetails.Cached
		}
		r.seen(usage.OpenAI(u.Prompt, cached, u.Completion))
	}
}
