package modelserver

import (
	"math"
	"net/http"
	"strconv"
	"time"
)

// Limit is a rate limit the server holds its generation requests to, as a
// provider does: Requests per Window, in fixed windows from the first
// request. A request over the limit is refused with 429, a Retry-After (whole
// seconds, rounded up) and retry-after-ms, and the endpoint's own error body;
// every answer carries the provider's rate-limit headers (OpenAI's
// x-ratelimit-*-requests on chat and responses, Anthropic's
// anthropic-ratelimit-requests-* on messages). The window is configurable
// so that a test of "N a minute" can run at N per few seconds.
type Limit struct {
	Requests int           // per window; 0 means no rate limit
	Window   time.Duration // 0 means a minute
	// Quota, when set, refuses every request after the first QuotaAfter
	// with a quota error that will not pass: OpenAI's 429
	// insufficient_quota, Anthropic's 400 "credit balance is too low".
	Quota      bool
	QuotaAfter int
	// Sliding holds the requests to Requests in any Window (a sliding
	// window) rather than in fixed windows; ResetFull makes the reset it
	// states the moment the window is back to its initial state rather
	// than the moment one more request is admitted (headers.go).
	Sliding, ResetFull bool
}

// LimitEvent is one generation request as the limit saw it.
type LimitEvent struct {
	At      time.Duration // since the first request
	Refused bool
}

// limiter is the server's state under a Limit; Server.mu guards it.
type limiter struct {
	Limit
	start    time.Time
	window   int         // the index of the current window
	used     int         // requests accepted in it
	accepted int         // in all
	recent   []time.Time // under Sliding: when the requests in the window came
	log      []LimitEvent
}

// SetLimit makes the server hold later generation requests to l.
func (s *Server) SetLimit(l Limit) {
	if l.Window <= 0 {
		l.Window = time.Minute
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limit = &limiter{Limit: l}
}

// LimitLog returns every generation request the limit saw, in order.
func (s *Server) LimitLog() []LimitEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limit == nil {
		return nil
	}
	return append([]LimitEvent(nil), s.limit.log...)
}

// refusal is how the limit answers one request: ok, refused for now
// (retry after), or refused for good (quota).
type refusal struct {
	ok         bool
	quota      bool
	retryAfter time.Duration
	remaining  int
	reset      time.Duration
	limit      int
}

// admit counts one generation request against the limit.
func (s *Server) admit() refusal {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.limit
	if l == nil {
		return refusal{ok: true, remaining: -1}
	}
	now := time.Now()
	if l.start.IsZero() {
		l.start = now
	}
	at := now.Sub(l.start)
	if w := int(at / l.Window); w != l.window {
		l.window, l.used = w, 0
	}
	reset := l.start.Add(time.Duration(l.window+1) * l.Window).Sub(now)
	r := refusal{ok: true, remaining: -1, reset: reset, limit: l.Requests}
	switch {
	case l.Quota && l.accepted >= l.QuotaAfter:
		r = refusal{quota: true, remaining: -1}
	case l.Sliding && l.Requests > 0:
		r = l.admitSliding(now)
	case l.Requests > 0 && l.used >= l.Requests:
		r = refusal{retryAfter: reset, remaining: 0, reset: reset, limit: l.Requests}
	default:
		l.used++
		l.accepted++
		if l.Requests > 0 {
			r.remaining = l.Requests - l.used
		}
	}
	l.log = append(l.log, LimitEvent{At: at, Refused: !r.ok})
	return r
}

// limited answers a generation request the limit refuses, in the format
// of the endpoint at path, and reports whether it did; for one it admits,
// it sets the rate-limit headers the answer will carry.
func (s *Server) limited(w http.ResponseWriter, path string) bool {
	r := s.admit()
	anthropic := path == "/v1/messages"
	h := w.Header()
	if r.remaining >= 0 {
		if anthropic {
			h.Set("anthropic-ratelimit-requests-limit", strconv.Itoa(r.limit))
			h.Set("anthropic-ratelimit-requests-remaining", strconv.Itoa(r.remaining))
			h.Set("anthropic-ratelimit-requests-reset", time.Now().Add(r.reset).UTC().Format(time.RFC3339))
		} else {
			h.Set("x-ratelimit-limit-requests", strconv.Itoa(r.limit))
			h.Set("x-ratelimit-remaining-requests", strconv.Itoa(r.remaining))
			h.Set("x-ratelimit-reset-requests", r.reset.Round(time.Millisecond).String())
		}
	}
	switch {
	case r.ok:
		return false
	case r.quota && anthropic:
		anthropicError(w, http.StatusBadRequest, "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.")
	case r.quota:
		writeJSON(w, http.StatusTooManyRequests, map[string]any{"error": map[string]any{
			"message": "You exceeded your current quota, please check your plan and billing details.",
			"type":    "insufficient_quota", "param": nil, "code": "insufficient_quota",
		}})
	default:
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(r.retryAfter.Seconds()))))
		h.Set("retry-after-ms", strconv.FormatInt(max(1, r.retryAfter.Milliseconds()), 10))
		msg := "Rate limit reached for requests: Limit " + strconv.Itoa(r.limit) + ", Used " + strconv.Itoa(r.limit) +
			", Requested 1. Please try again in " + r.retryAfter.Round(time.Millisecond).String() + "."
		if anthropic {
			anthropicError(w, http.StatusTooManyRequests, "This request would exceed your organization's rate limit. "+msg)
		} else {
			openAIError(w, http.StatusTooManyRequests, msg)
		}
	}
	return true
}
