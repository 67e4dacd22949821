package ratelimit

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// hostile are header forms a model server may send; every wait read from
// them is within [0, MaxWait] — none overflows, none is negative.
var hostile = [][]string{
	{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "9999-12-31T00:00:00Z"},
	{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "2263-01-01T00:00:00Z"},
	{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "8760h"},
	{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "99999999999999999h"},
	{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1e300"},
	{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "+Inf"},
	{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "-Inf"},
	{"x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "NaN"},
	{"x-ratelimit-remaining-requests", "-9223372036854775808", "x-ratelimit-reset-requests", "0001-01-01T00:00:00Z"},
	{"x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "2540400h"},
	{"anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", "9999-12-31T23:59:59Z"},
	{"anthropic-ratelimit-tokens-remaining", "0", "anthropic-ratelimit-tokens-reset", "2099-01-01T00:00:00Z"},
	{"anthropic-ratelimit-output-tokens-remaining", "0", "anthropic-ratelimit-output-tokens-reset", "9999-12-31T23:59:59+14:00"},
	{"Retry-After", "999999999"},
	{"Retry-After", "9223372036854775807"},
	{"Retry-After", "1e309"},
	{"Retry-After", "+Inf"},
	{"Retry-After", "NaN"},
	{"Retry-After", "-1"},
	{"Retry-After", "Fri, 31 Dec 9999 23:59:59 GMT"},
	{"retry-after-ms", "9e12"},
	{"retry-after-ms", "1e400"},
	{"retry-after-ms", "-1e308"},
}

func TestHostileHintsAreCapped(t *testing.T) {
	now := time.Now()
	for _, kv := range hostile {
		h := parseHints(header(kv...), now, time.Minute)
		for _, w := range []wait{h.retryAfter, h.requestsReset, h.tokensReset} {
			if w.D < 0 || w.D > time.Minute || w.D > 0 && w.Said == "" {
				t.Errorf("%q: a wait of %v (%q), want within [0, 1m] and said", kv, w.D, w.Said)
			}
		}
		if h.requestsLeft < -1 || h.tokensLeft < -1 {
			t.Errorf("%q: remaining %d, %d; want 0 or more, or -1 for not said", kv, h.requestsLeft, h.tokensLeft)
		}
		if d := RetryAfter(header(kv...), now); d < 0 || d > DefaultMaxWait {
			t.Errorf("%q: RetryAfter = %v", kv, d)
		}
	}
}

// Through a limiter: after any hostile answer, a request with an hour to
// go waits at most MaxWait (plus the spread), and onWait is told a
// positive wait at most once a second; a request with less time left than
// the wait fails at once with a WaitError naming the header.
func TestHostileHeadersThroughTheLimiter(t *testing.T) {
	for _, kv := range hostile {
		for _, status := range []bool{false, true} { // an answer, a refusal
			synctest.Test(t, func(t *testing.T) {
				l := newLimiter(Key{Driver: "openai", BaseURL: "http://127.0.0.1:1/v1"}, Options{MaxWait: time.Minute, Cap: 10 * time.Second})
				tk, err := l.Acquire(t.Context(), nil)
				if err != nil {
					t.Fatal(err)
				}
				tk.Done(Answer{Limited: status, Header: header(kv...)})
				short, cancel := context.WithTimeout(t.Context(), 5*time.Second)
				tk, err = l.Acquire(short, nil)
				cancel()
				if err == nil {
					tk.Done(Answer{Header: header(kv...)})
				}
				var w *WaitError
				if errors.As(err, &w) {
					if w.Wait <= 5*time.Second || w.Wait > time.Minute || !strings.Contains(w.Error(), "longer than the 5s the turn has left") {
						t.Errorf("%q: %v (wait %v)", kv, w, w.Wait)
					}
				} else if err != nil {
					t.Fatalf("%q: %v", kv, err)
				}
				start := time.Now()
				tolds := 0
				ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
				defer cancel()
				if _, err := l.Acquire(ctx, func(d time.Duration) {
					tolds++
					if d <= 0 || d > time.Minute+l.opts.Spread {
						t.Errorf("%q: told a wait of %v", kv, d)
					}
				}); err != nil {
					t.Fatalf("%q: %v", kv, err)
				}
				if took := time.Since(start); took > time.Minute+l.opts.Spread || tolds > 1+int(took/time.Second) {
					t.Errorf("%q: waited %v, told %d times", kv, took, tolds)
				}
			})
		}
	}
}

// The wait error says the server's own figure and the cap.
func TestWaitErrorSaysTheServersFigure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(Key{Driver: "openai", BaseURL: "https://api.example.com/v1"}, Options{})
		tk, _ := l.Acquire(t.Context(), nil)
		tk.Done(Answer{Header: header("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "9999-12-31T00:00:00Z")})
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		_, err := l.Acquire(ctx, nil)
		want := "api.example.com: the server asks for a wait (x-ratelimit-reset-requests: 9999-12-31T00:00:00Z, capped at ratelimit.max_wait 10m0s): 10m0s to wait, longer than the 30s the turn has left"
		if err == nil || err.Error() != want {
			t.Fatalf("Acquire = %v, want %q", err, want)
		}
	})
}

// SetMaxWait changes the cap of the limiters made already.
func TestSetMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var r Registry
		l := r.For(Key{Driver: "openai"})
		r.SetMaxWait(3 * time.Second)
		tk, _ := l.Acquire(t.Context(), nil)
		start := time.Now()
		tk.Done(Answer{Limited: true, Header: header("Retry-After", "3600")})
		if _, err := l.Acquire(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(start); took < 3*time.Second || took > 3*time.Second+l.opts.Spread {
			t.Fatalf("waited %v for Retry-After: 3600 under a cap of 3 s", took)
		}
	})
}

// A quota is the provider's own quota error, or a 429 or 403 that says
// quota; never free text: a 400 about billing_address.country, or a
// failed turn that mentions "billing" or "per day", is not one.
func TestQuotaOnlyFromTheProvidersError(t *testing.T) {
	for _, c := range []struct {
		status int
		body   string
		quota  bool
	}{
		{400, `{"error":{"message":"invalid value for field billing_address.country","type":"invalid_request_error"}}`, false},
		{400, `{"error":{"message":"Use at most 3 requests per day in tests"}}`, false},
		{500, `{"error":{"message":"billing service unavailable"}}`, false},
		{429, `{"error":{"message":"Rate limit reached on tokens per day (TPD)","type":"tokens"}}`, false},
		{429, `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota"}}`, true},
		{403, `{"error":{"code":403,"message":"Quota exceeded for quota metric","status":"PERMISSION_DENIED"}}`, true},
		{429, `{"error":{"status":"RESOURCE_EXHAUSTED","message":"Quota exceeded"}}`, true},
		{400, `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API."}}`, true},
		{402, `{"type":"error","error":{"type":"billing_error","message":"payment"}}`, true},
	} {
		a := Classify(c.status, []byte(c.body), "")
		if (a.Quota != "") != c.quota {
			t.Errorf("Classify(%d, %s) = %+v, want quota %v", c.status, c.body, a, c.quota)
		}
	}
	for _, c := range []struct {
		text  string
		quota bool
	}{
		{`Error: 400 invalid value for field billing_address.country`, false},
		{`the model said: we hit the per day billing cap`, false},
		{`error: daily limit of the tool reached`, false},
		{`API Error: 429 {"error":{"message":"You exceeded your current quota"}}`, true},
		{`codex: Quota exceeded. Check your plan and billing details.`, true},
		{`API Error: 403 quota exceeded`, true},
	} {
		if _, quota := Scan(c.text); quota != c.quota {
			t.Errorf("Scan(%q): quota %v, want %v", c.text, quota, c.quota)
		}
	}
}
