package modelserver

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"
)

// stream writes server-sent events, flushing each, with a delay between
// them. A write after the client left is dropped.
type stream struct {
	ctx   context.Context //nolint:containedctx // the request's context, for the span of one handler
	w     http.ResponseWriter
	delay time.Duration
	n     int
}

func newStream(ctx context.Context, w http.ResponseWriter, delay time.Duration) *stream {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	flush(w)
	return &stream{ctx: ctx, w: w, delay: delay}
}

// event writes one event: an "event:" line when name is set, then the data
// line. It reports false once the client has gone.
func (s *stream) event(name string, data any) bool {
	if s.n > 0 && !sleep(s.ctx, s.delay) {
		return false
	}
	s.n++
	var b []byte
	if str, ok := data.(string); ok {
		b = []byte(str)
	} else {
		b, _ = json.Marshal(data)
	}
	var buf []byte
	if name != "" {
		buf = append(buf, "event: "+name+"\n"...)
	}
	buf = append(buf, "data: "...)
	buf = append(buf, b...)
	buf = append(buf, "\n\n"...)
	if _, err := s.w.Write(buf); err != nil {
		return false
	}
	flush(s.w)
	return s.ctx.Err() == nil
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

// sleep waits d or until ctx is done, and reports whether ctx is still live.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// chunks splits s into pieces of at most 16 bytes, never inside a UTF-8
// sequence, the way a model streams tokens.
func chunks(s string) []string {
	const most = 16
	var out []string
	for len(s) > 0 {
		n := min(most, len(s))
		for n < len(s) && !utf8.RuneStart(s[n]) {
			n++
		}
		out = append(out, s[:n])
		s = s[n:]
	}
	return out
}

func itoa(n int) string { return strconv.Itoa(n) }

func now() int64 { return time.Now().Unix() }

// rawJSON returns s as a JSON value when it is valid JSON, else as a string.
func rawJSON(s string) any {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	return s
}
