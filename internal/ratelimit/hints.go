package ratelimit

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// hints is what a response's header says about the provider's limits.
type hints struct {
	retryAfter    time.Duration // 0: not said
	requestsLeft  int           // -1: not said
	requestsLimit int           // the window's limit; 0: not said
	requestsReset time.Time
	tokensLeft    int // -1: not said
	tokensReset   time.Time
}

// parseHints reads the rate-limit headers of h, received at now.
// retry-after-ms wins over Retry-After, which is seconds or an HTTP date.
// OpenAI's reset values are durations ("1s", "6m0s", "20ms"); Anthropic's
// are RFC 3339 times.
func parseHints(h http.Header, now time.Time) hints {
	out := hints{requestsLeft: -1, tokensLeft: -1}
	if h == nil {
		return out
	}
	out.retryAfter = RetryAfter(h, now)
	for _, k := range []string{"x-ratelimit-limit-requests", "anthropic-ratelimit-requests-limit"} {
		if n, err := strconv.Atoi(strings.TrimSpace(h.Get(k))); err == nil && n > 0 {
			out.requestsLimit = n
		}
	}
	for _, p := range []struct {
		left, reset string
		n           *int
		t           *time.Time
	}{
		{"x-ratelimit-remaining-requests", "x-ratelimit-reset-requests", &out.requestsLeft, &out.requestsReset},
		{"anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-requests-reset", &out.requestsLeft, &out.requestsReset},
		{"x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens", &out.tokensLeft, &out.tokensReset},
		{"anthropic-ratelimit-tokens-remaining", "anthropic-ratelimit-tokens-reset", &out.tokensLeft, &out.tokensReset},
	} {
		v := strings.TrimSpace(h.Get(p.left))
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			continue
		}
		reset, ok := resetAt(h.Get(p.reset), now)
		if !ok {
			continue
		}
		*p.n, *p.t = n, reset
	}
	return out
}

// RetryAfter is the wait h asks for: retry-after-ms, else Retry-After in
// seconds or as an HTTP date; 0 when it asks for none.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return max(0, time.Duration(s*float64(time.Second)))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, t.Sub(now))
	}
	return 0
}

// resetAt reads a reset header: a duration from now (OpenAI's "1s",
// "6m0s"), a number of seconds, or an RFC 3339 time (Anthropic's).
func resetAt(v string, now time.Time) (time.Time, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return time.Time{}, false
	}
	if d, err := time.ParseDuration(v); err == nil {
		return now.Add(d), true
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return now.Add(time.Duration(s * float64(time.Second))), true
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, true
	}
	return time.Time{}, false
}
