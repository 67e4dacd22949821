package ratelimit

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// DefaultMaxWait bounds every wait a provider's header can ask for, unless
// Options.MaxWait says otherwise (the configuration key ratelimit.max_wait).
const DefaultMaxWait = 10 * time.Minute

// wait is a wait a header asks for, clamped: D is at most the cap and
// never negative, whatever the header said; Said is the header and its
// value as the server sent them (bounded, printable), for messages.
type wait struct {
	D    time.Duration
	Said string
}

// capped is the wait of d asked for by header name with value v, capped
// at most; its Said says when the cap applied.
func capped(d time.Duration, most time.Duration, name, v string) wait {
	w := wait{D: min(d, most), Said: said(name, v)}
	if d > most {
		w.Said += ", capped at ratelimit.max_wait " + most.String()
	}
	return w
}

// hints is what a response's header says about the provider's limits.
// Every wait in it is clamped to the cap by construction: a header can
// neither overflow a time nor hold a request back for longer than the cap.
type hints struct {
	retryAfter    wait // D 0: not said
	requestsLeft  int  // -1: not said
	requestsReset wait // from the moment the answer came
	tokensLeft    int  // -1: not said
	tokensReset   wait
}

// parseHints reads the rate-limit headers of h, received at now, capping
// every wait at most. retry-after-ms wins over Retry-After, which is
// seconds or an HTTP date. OpenAI's reset values are durations ("1s",
// "6m0s", "20ms"); Anthropic's are RFC 3339 times. A remaining count below
// zero is none; one that is not a whole number is not said.
func parseHints(h http.Header, now time.Time, most time.Duration) hints {
	out := hints{requestsLeft: -1, tokensLeft: -1}
	if h == nil {
		return out
	}
	out.retryAfter = retryAfter(h, now, most)
	for _, p := range []struct {
		left, reset string
		n           *int
		w           *wait
	}{
		{"x-ratelimit-remaining-requests", "x-ratelimit-reset-requests", &out.requestsLeft, &out.requestsReset},
		{"anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-requests-reset", &out.requestsLeft, &out.requestsReset},
		{"x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens", &out.tokensLeft, &out.tokensReset},
		{"anthropic-ratelimit-tokens-remaining", "anthropic-ratelimit-tokens-reset", &out.tokensLeft, &out.tokensReset},
		{"anthropic-ratelimit-input-tokens-remaining", "anthropic-ratelimit-input-tokens-reset", &out.tokensLeft, &out.tokensReset},
		{"anthropic-ratelimit-output-tokens-remaining", "anthropic-ratelimit-output-tokens-reset", &out.tokensLeft, &out.tokensReset},
	} {
		v := strings.TrimSpace(h.Get(p.left))
		if v == "" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		d, ok := resetIn(h.Get(p.reset), now)
		if !ok {
			continue
		}
		n = max(0, min(n, math.MaxInt32))
		if *p.n == 0 && (n > 0 || p.w.D >= min(d, most)) {
			continue // an earlier header of the kind said none remain (for longer)
		}
		*p.n = int(n)
		*p.w = capped(d, most, p.reset, h.Get(p.reset))
	}
	return out
}

// RetryAfter is the wait h asks for, capped at DefaultMaxWait:
// retry-after-ms, else Retry-After in seconds or as an HTTP date; 0 when it
// asks for none or says nothing that is a wait.
func RetryAfter(h http.Header, now time.Time) time.Duration {
	return retryAfter(h, now, DefaultMaxWait).D
}

func retryAfter(h http.Header, now time.Time, most time.Duration) wait {
	if v := strings.TrimSpace(h.Get("retry-after-ms")); v != "" {
		if ms, err := parseFloat(v); err == nil {
			if d, ok := duration(ms, time.Millisecond); ok && d > 0 {
				return capped(d, most, "retry-after-ms", v)
			}
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return wait{}
	}
	d, ok := time.Duration(0), false
	if s, err := parseFloat(v); err == nil {
		d, ok = duration(s, time.Second)
	} else if t, err := http.ParseTime(v); err == nil {
		d, ok = until(t, now), true
	}
	if !ok || d <= 0 {
		return wait{}
	}
	return capped(d, most, "Retry-After", v)
}

// resetIn reads a reset header as the wait from now: a duration (OpenAI's
// "1s", "6m0s"), a number of seconds, or an RFC 3339 time (Anthropic's).
// A reset in the past is 0; one too far to say saturates (the caller caps
// it).
func resetIn(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if d, err := time.ParseDuration(v); err == nil {
		return max(d, 0), true
	}
	if s, err := parseFloat(v); err == nil {
		d, ok := duration(s, time.Second)
		return max(d, 0), ok
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return until(t, now), true
	}
	// "8760h" overflows no duration, but "9999999999h" fails to parse:
	// a duration too long to say is as long as can be.
	if durationLike(v) {
		return math.MaxInt64, true
	}
	return 0, false
}

// durationLike says v is written as a Go duration (digits and units),
// which ParseDuration refuses only when it is too long to hold.
func durationLike(v string) bool {
	v = strings.TrimPrefix(v, "+")
	if v == "" || !unicode.IsDigit(rune(v[0])) {
		return false
	}
	return strings.IndexFunc(v, func(r rune) bool {
		return !unicode.IsDigit(r) && r != '.' && !strings.ContainsRune("nsuµmh", r)
	}) < 0
}

// parseFloat is strconv.ParseFloat, with a number too large to hold
// ("1e309") as the infinity it rounds to rather than an error.
func parseFloat(v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if errors.Is(err, strconv.ErrRange) {
		return f, nil
	}
	return f, err
}

// duration is v units as a duration, saturating instead of overflowing: a
// figure past what a duration holds (+Inf included) is the longest one. NaN
// is no figure; a negative one is 0.
func duration(v float64, unit time.Duration) (time.Duration, bool) {
	switch {
	case math.IsNaN(v):
		return 0, false
	case v <= 0:
		return 0, true
	case v >= float64(math.MaxInt64)/float64(unit):
		return math.MaxInt64, true
	}
	return time.Duration(v * float64(unit)), true
}

// until is t - now, never negative; a time too far to say (past 2262)
// saturates, as time.Time.Sub does.
func until(t, now time.Time) time.Duration {
	return max(t.Sub(now), 0)
}

// said is a header as a message quotes it: its name and at most 64 bytes
// of its value, with anything unprintable replaced.
func said(name, v string) string {
	v = strings.TrimSpace(v)
	if len(v) > 64 {
		v = strings.ToValidUTF8(v[:64], "") + "…"
	}
	v = strings.Map(func(r rune) rune {
		if !unicode.IsPrint(r) {
			return '?'
		}
		return r
	}, v)
	return name + ": " + v
}
