package ratelimit

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func header(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// A Retry-After in seconds holds every request back for that long, to the
// second (within Spread), and no longer.
func TestRetryAfterSeconds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(Key{Driver: "openai"}, Options{Rand: func() float64 { return 0.5 }})
		tk, err := l.Acquire(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		tk.Done(Answer{Limited: true, Header: header("Retry-After", "12")})
		var told time.Duration
		if _, err := l.Acquire(t.Context(), func(d time.Duration) { told = d }); err != nil {
			t.Fatal(err)
		}
		waited := time.Since(start)
		if waited < 12*time.Second || waited >= 12*time.Second+100*time.Millisecond {
			t.Fatalf("waited %v after Retry-After: 12, want 12 s within the 100 ms spread", waited)
		}
		if told != waited {
			t.Fatalf("onWait was told %v, the wait was %v", told, waited)
		}
		if s := l.Stats(); s.Refused != 1 || s.Waits != 1 || s.Requests != 2 {
			t.Fatalf("stats %+v, want 2 requests, 1 refused, 1 wait", s)
		}
	})
}

// An HTTP-date Retry-After and retry-after-ms are honoured too; -ms wins.
func TestRetryAfterForms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		now := time.Now()
		for _, c := range []struct {
			h    http.Header
			want time.Duration
		}{
			{header("Retry-After", now.Add(30*time.Second).UTC().Format(http.TimeFormat)), 30 * time.Second},
			{header("Retry-After", "7", "retry-after-ms", "1500"), 1500 * time.Millisecond},
			{header("Retry-After", "0.5"), 500 * time.Millisecond},
			{header("Retry-After", "soon"), 0},
		} {
			if got := RetryAfter(c.h, now); got != c.want {
				t.Errorf("RetryAfter(%v) = %v, want %v", c.h, got, c.want)
			}
		}
	})
}

// Without a hint, the n-th refusal in a row waits a full-jitter draw from
// [0, min(Cap, Base·2^(n-1))): the bounds hold at both ends of the draw.
func TestBackoffFullJitter(t *testing.T) {
	for _, draw := range []float64{0, 0.999999} {
		l := newLimiter(Key{}, Options{Base: time.Second, Cap: 10 * time.Second, Rand: func() float64 { return draw }})
		for n, ceil := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second} {
			got := l.backoff(n + 1)
			if got < 0 || got >= ceil || (draw > 0.9 && got < ceil*99/100) {
				t.Errorf("draw %v, refusal %d: backoff %v, want in [0, %v) and near its end", draw, n+1, got, ceil)
			}
		}
	}
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(Key{}, Options{Base: time.Second, Cap: 10 * time.Second, Rand: func() float64 { return 0.5 }})
		for n, want := range []time.Duration{500 * time.Millisecond, time.Second, 2 * time.Second} {
			tk, _ := l.Acquire(t.Context(), nil)
			tk.Done(Answer{Limited: true})
			start := time.Now()
			if _, err := l.Acquire(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			// The wait is the backoff plus the spread's draw (0.5 · 100 ms).
			if got := time.Since(start); got != want+50*time.Millisecond {
				t.Fatalf("refusal %d: waited %v, want %v", n+1, got, want+50*time.Millisecond)
			}
			l.inflight-- // the second ticket is not done: give its slot back
		}
	})
}

// The window grows by 1/window per answer and halves on a refusal, once
// per congestion event; it never drops below 1 nor grows past Max.
func TestAIMDWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(Key{}, Options{Initial: 4, Max: 6, Rand: func() float64 { return 0 }})
		var tks []*Ticket
		for range 4 {
			tk, err := l.Acquire(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			tks = append(tks, tk)
		}
		// A fifth waits for a slot.
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		if _, err := l.Acquire(ctx, nil); err == nil {
			t.Fatal("a fifth request was admitted past a window of 4")
		}
		cancel()
		// Four refusals of requests sent together halve the window once.
		for _, tk := range tks {
			tk.Done(Answer{Limited: true, Header: header("Retry-After", "1")})
		}
		if w := l.Stats().Window; w != 2 {
			t.Fatalf("window %v after one congestion event, want 2", w)
		}
		time.Sleep(2 * time.Second)
		// Answers grow it by 1/window each: 2 → 2.5 → 2.9 → …
		want := 2.0
		for range 12 {
			tk, err := l.Acquire(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			tk.Done(Answer{})
			want = min(6, want+1/want)
			if w := l.Stats().Window; w != want {
				t.Fatalf("window %v, want %v", w, want)
			}
		}
		// Refusals one after another each halve it, down to 1.
		for range 5 {
			tk, _ := l.Acquire(t.Context(), nil)
			tk.Done(Answer{Limited: true, Header: header("retry-after-ms", "1")})
		}
		if w := l.Stats().Window; w != 1 {
			t.Fatalf("window %v after five refusals in turn, want 1", w)
		}
	})
}

// When the provider says no requests remain, nothing is sent before its
// reset; a quota ends every later request at once.
func TestRemainingAndQuota(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(Key{}, Options{Rand: func() float64 { return 0 }})
		tk, _ := l.Acquire(t.Context(), nil)
		start := time.Now()
		tk.Done(Answer{Header: header("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "6.5s")})
		tk, _ = l.Acquire(t.Context(), nil)
		if got := time.Since(start); got != 6500*time.Millisecond {
			t.Fatalf("waited %v with no requests left, want the 6.5 s to the reset", got)
		}
		reset := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339)
		tk.Done(Answer{Header: header("anthropic-ratelimit-tokens-remaining", "0", "anthropic-ratelimit-tokens-reset", reset)})
		start = time.Now()
		tk, _ = l.Acquire(t.Context(), nil)
		if got := time.Since(start); got < 2*time.Second || got > 3*time.Second {
			t.Fatalf("waited %v with no tokens left, want to the reset 3 s on (to the second)", got)
		}
		tk.Done(Answer{Quota: "You exceeded your current quota"})
		_, err := l.Acquire(t.Context(), nil)
		if q := (*QuotaError)(nil); !errors.As(err, &q) || q.Message != "You exceeded your current quota" {
			t.Fatalf("after a quota, Acquire = %v, want the QuotaError", err)
		}
		time.Sleep(time.Hour)
		if _, err := l.Acquire(t.Context(), nil); err != nil {
			t.Fatalf("an hour after a quota, Acquire = %v, want one request to find out", err)
		}
	})
}

func TestClassifyAndScan(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		want   Answer
	}{
		{429, `{"error":{"type":"rate_limit_exceeded"}}`, Answer{Limited: true}},
		{529, `{"type":"error","error":{"type":"overloaded_error"}}`, Answer{Limited: true}},
		{503, `{"error":{"message":"The server is overloaded"}}`, Answer{Limited: true}},
		{503, `bad gateway`, Answer{}},
		{500, `{}`, Answer{}},
		{429, `{"error":{"code":"insufficient_quota"}}`, Answer{Quota: "no quota"}},
	} {
		if got := Classify(c.status, []byte(c.body), "no quota"); got.Limited != c.want.Limited || got.Quota != c.want.Quota {
			t.Errorf("Classify(%d, %s) = %+v, want %+v", c.status, c.body, got, c.want)
		}
	}
	for _, c := range []struct {
		text    string
		limited bool
		quota   bool
	}{
		{`API Error: 429 {"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, true, false},
		{"stream error: exceeded retry limit, last status: 429 Too Many Requests", true, false},
		{"Repository of 529 files", false, false},
		{"HTTP status 529", true, false},
		{"ERROR: You exceeded your current quota, please check your plan and billing details", true, true},
		{"claude exited with status 1: no such file", false, false},
		{`API Error: 400 {"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API."}}`, true, true},
	} {
		line, quota := Scan(c.text)
		if (line != "") != c.limited || quota != c.quota {
			t.Errorf("Scan(%q) = %q, %v; want limited %v, quota %v", c.text, line, quota, c.limited, c.quota)
		}
	}
}

// One limiter per key, shared by every caller of the registry; a key shows
// no secret.
func TestRegistrySharesOneLimiterPerKey(t *testing.T) {
	var r Registry
	k := Key{Driver: "openai", BaseURL: "https://api.openai.com/v1", Key: Fingerprint("sk-secret"), Model: "m"}
	if r.For(k) != r.For(k) { //nolint:staticcheck // SA4000: two calls, which must give one limiter
		t.Fatal("two limiters for one key")
	}
	other := k
	other.Model = "n"
	if r.For(other) == r.For(k) {
		t.Fatal("one limiter for two models")
	}
	if s := k.String() + k.Key; strings.Contains(s, "sk-secret") || k.Provider() != "api.openai.com" {
		t.Fatalf("key %q (provider %q) shows the secret or not the host", s, k.Provider())
	}
	if got := Waiting(11200*time.Millisecond, k); got != "waiting 12 s for api.openai.com (rate limit)" {
		t.Fatalf("Waiting = %q", got)
	}
}
