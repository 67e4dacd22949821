package modelserver

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Reply is one scripted answer of the server.
type Reply struct {
	// Text is the assistant's text.
	Text string
	// ToolCall, when set, is a tool call the assistant makes after Text (if
	// any); the stop reason then says the model wants a tool.
	ToolCall *ToolCall
	// Status, when neither 0 nor 200, answers the request with this HTTP
	// status and an error body in the endpoint's format (e.g. 500, 429).
	Status int
	// Message, with Status, is the error body's message; "" means
	// "modelserver: scripted <status text>". A test can echo what it was
	// sent (a key, to check it is redacted).
	Message string
	// Delay is waited before the first byte of the answer (a slow model).
	Delay time.Duration
	// ChunkDelay is waited between the chunks of a streamed answer.
	ChunkDelay time.Duration
	// Input and Output are the token counts reported as usage. Zero means
	// the default: len(request body)/4 and len(Text)/4.
	Input, Output int
	// CacheRead and CacheWrite are the parts of Input read from and
	// written to the prompt cache, each reported in the endpoint's own
	// convention: the Anthropic Messages API counts them apart from
	// input_tokens, the OpenAI APIs count cached tokens inside the prompt
	// (prompt_tokens_details, input_tokens_details) and report no writes.
	// A negative value means len(request body)/8 (half the default input).
	CacheRead, CacheWrite int
	// Finish, when "length", ends the answer as cut off at the model's token
	// limit (finish_reason "length", stop_reason "max_tokens", an incomplete
	// response). "" is the natural stop reason.
	Finish string
	// Cut ends a streamed answer abruptly after its text: no final chunk, no
	// usage, no end marker — a broken stream.
	Cut bool
	// Chunks, when set, are the pieces Text is streamed in, one event
	// each (a key split over 1-byte chunks); Text, when empty, is their
	// join. Unset, Text goes in pieces of at most 16 bytes.
	Chunks []string
}

// pieces returns the pieces the reply's text is streamed in.
func (rep Reply) pieces() []string {
	if rep.Chunks != nil {
		return rep.Chunks
	}
	return chunks(rep.Text)
}

// ToolCall is a function call the assistant makes.
type ToolCall struct {
	ID        string // "" means a generated id
	Name      string
	Arguments string // a JSON object
	// Namespace is the Responses API's namespace of the tool (Codex puts
	// an MCP server's tools in one); the other APIs have none.
	Namespace string
}

// Request is one request the server received.
type Request struct {
	Method string
	Path   string
	Body   []byte
	Header http.Header
}

// JSON decodes the request body into a generic value, or nil if it is not
// JSON.
func (r Request) JSON() map[string]any {
	var v map[string]any
	if json.Unmarshal(r.Body, &v) != nil {
		return nil
	}
	return v
}

// Server is a running scripted model server. Its zero value is not usable;
// call Start.
type Server struct {
	srv *httptest.Server

	mu       sync.Mutex
	replies  []Reply
	next     int
	handle   func(Request) Reply
	header   http.Header // added to every generation answer (SetHeader)
	requests []Request
	bills    []Bill
	seq      int
	limit    *limiter // nil: no rate limit (SetLimit)
}

// Bill is what the server billed for one generation request: the tokens its
// usage reported, cache included. An error reply bills nothing.
type Bill struct {
	Path string
	// ID is the message or response id of the answer.
	ID string
	// Input is the whole prompt, CacheRead and CacheWrite included.
	Input, Output, CacheRead, CacheWrite int
}

// Tokens is everything the request was billed: the prompt (cache reads
// and writes are part of it) and the output.
func (b Bill) Tokens() int64 { return int64(b.Input + b.Output) }

// Bills returns what the server billed so far, one Bill per answered
// generation request, in the order they were answered.
func (s *Server) Bills() []Bill {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Bill(nil), s.bills...)
}

// Billed is the sum of the tokens of every Bill so far: what a client that
// records usage as billed must have recorded.
func (s *Server) Billed() int64 {
	var n int64
	for _, b := range s.Bills() {
		n += b.Tokens()
	}
	return n
}

// bill records what the answer id to req is billed.
func (s *Server) bill(req Request, rep Reply, id string) {
	if failed(rep) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bills = append(s.bills, Bill{Path: req.Path, ID: id, Input: rep.Input, Output: rep.Output, CacheRead: rep.CacheRead, CacheWrite: rep.CacheWrite})
}

// Start starts a server on 127.0.0.1 that gives replies in order, and closes
// it when the test ends. With no replies, every answer is the text "ok".
func Start(t testing.TB, replies ...Reply) *Server {
	t.Helper()
	s := &Server{replies: replies}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// URL returns the server's base URL, http://127.0.0.1:PORT, without /v1.
func (s *Server) URL() string { return s.srv.URL }

// Handle makes f compute the reply to every later generation request,
// instead of the scripted list.
func (s *Server) Handle(f func(r Request) Reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handle = f
}

// Requests returns a copy of every request received so far, in order.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Close cuts every open connection and stops the server. It is idempotent.
func (s *Server) Close() {
	s.srv.CloseClientConnections()
	s.srv.Close()
}

func (s *Server) record(r *http.Request) Request {
	body, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, Body: body, Header: r.Header.Clone()}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, req)
	return req
}

// reply takes the reply for a generation request and a sequence number for
// the ids of its answer.
func (s *Server) reply(req Request) (Reply, int) {
	s.mu.Lock()
	s.seq++
	seq := s.seq
	handle := s.handle
	var rep Reply
	switch {
	case handle != nil:
	case len(s.replies) == 0:
		rep = Reply{Text: "ok"}
	default:
		rep = s.replies[min(s.next, len(s.replies)-1)]
		s.next++
	}
	s.mu.Unlock()
	if handle != nil {
		rep = handle(req)
	}
	if rep.Text == "" && rep.Chunks != nil {
		rep.Text = strings.Join(rep.Chunks, "")
	}
	if rep.Input == 0 {
		rep.Input = len(req.Body) / 4
	}
	if rep.CacheRead < 0 {
		rep.CacheRead = len(req.Body) / 8
	}
	if rep.CacheWrite < 0 {
		rep.CacheWrite = len(req.Body) / 8
	}
	// A negative Input (a hostile server's) is reported as it is, with no cache.
	rep.CacheRead = max(0, min(rep.CacheRead, rep.Input))
	rep.CacheWrite = max(0, min(rep.CacheWrite, rep.Input-rep.CacheRead))
	if rep.Output == 0 {
		rep.Output = len(rep.Text) / 4
		if rep.ToolCall != nil {
			rep.Output += len(rep.ToolCall.Arguments) / 4
		}
	}
	if rep.ToolCall != nil && rep.ToolCall.ID == "" {
		tc := *rep.ToolCall
		tc.ID = "call_" + itoa(seq)
		rep.ToolCall = &tc
	}
	return rep, seq
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	req := s.record(r)
	path := strings.TrimSuffix(r.URL.Path, "/")
	if generation(path) && r.Method == http.MethodPost {
		s.addHeader(w)
	}
	switch {
	case path == "" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = io.WriteString(w, "modelserver: a scripted model server for tests\n")
		}
	case path == "/v1/models" && r.Method == http.MethodGet:
		models(w, r)
	case path == "/v1/messages/count_tokens" && r.Method == http.MethodPost:
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": max(1, len(req.Body)/4)})
	case generation(path) && r.Method == http.MethodPost && s.limited(w, path):
		// Refused by the rate limit, in the endpoint's own format.
	case path == "/v1/chat/completions" && r.Method == http.MethodPost:
		s.chat(w, r, req)
	case path == "/v1/responses" && r.Method == http.MethodPost:
		s.responses(w, r, req)
	case path == "/v1/messages" && r.Method == http.MethodPost:
		s.messages(w, r, req)
	default:
		writeJSON(w, http.StatusNotFound, map[string]any{"error": map[string]any{
			"message": "modelserver: no endpoint " + r.Method + " " + r.URL.Path, "type": "invalid_request_error", "code": "not_found",
		}})
	}
}

// generation says whether path is one of the generation endpoints, which
// take replies and count against the rate limit.
func generation(path string) bool {
	return path == "/v1/chat/completions" || path == "/v1/responses" || path == "/v1/messages"
}

// models lists one model per API flavour: Anthropic clients send an
// anthropic-version header.
func models(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("anthropic-version") != "" {
		writeJSON(w, http.StatusOK, map[string]any{
			"data": []any{map[string]any{
				"type": "model", "id": "test-model", "display_name": "Test model", "created_at": "2025-01-01T00:00:00Z",
			}},
			"has_more": false, "first_id": "test-model", "last_id": "test-model",
		})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data":   []any{map[string]any{"id": "test-model", "object": "model", "created": 1735689600, "owned_by": "modelserver"}},
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// failed reports whether rep is an error reply.
func failed(rep Reply) bool { return rep.Status != 0 && rep.Status != http.StatusOK }

// requestModel returns the "model" of a JSON request body, or "test-model".
func requestModel(req Request) string {
	if m, ok := req.JSON()["model"].(string); ok && m != "" {
		return m
	}
	return "test-model"
}

// streaming reports whether a JSON request body asks for a stream.
func streaming(req Request) bool {
	b, _ := req.JSON()["stream"].(bool)
	return b
}
