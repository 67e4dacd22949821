package openai

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/internal/ratelimit"
)

// A refusal for now is sent again within the turn, when the limiter says:
// after the server's Retry-After, with progress saying what it waits for.
func TestRateLimitRetriedWithinTheTurn(t *testing.T) {
	t.Parallel()
	s := modelserver.Start(t, modelserver.Reply{Text: "done"})
	s.SetLimit(modelserver.Limit{Requests: 1, Window: 1500 * time.Millisecond})
	d := New(Options{Limits: &ratelimit.Registry{}})
	var mu sync.Mutex
	var waits []string
	start := time.Now()
	for range 2 {
		tn := turn(t, s)
		tn.Progress = func(p engine.Progress) {
			mu.Lock()
			defer mu.Unlock()
			if strings.HasPrefix(p.Activity, "waiting ") && strings.HasSuffix(p.Activity, "(rate limit)") {
				waits = append(waits, p.Activity)
			}
		}
		res, err := d.Turn(context.Background(), tn)
		if err != nil || res.Status != engine.Completed || res.Output != "done" {
			t.Fatalf("Turn = %+v, %v; want completed after the wait", res, err)
		}
	}
	if took := time.Since(start); took < 1500*time.Millisecond {
		t.Errorf("two requests at one per 1.5 s took %v", took)
	}
	if len(waits) == 0 || !strings.Contains(waits[0], "for 127.0.0.1:") {
		t.Errorf("progress said %q, want a wait for the server's host", waits)
	}
	// The second turn knew from the first answer's headers that none
	// remained: it waited rather than being refused.
	for _, e := range s.LimitLog() {
		if e.Refused {
			t.Errorf("a request was refused at %v; the limiter should have waited for the reset", e.At)
		}
	}
}

// A server that keeps refusing ends the turn rate_limit after RateRetries
// more tries; the backoff is the limiter's.
func TestRateLimitGivesUp(t *testing.T) {
	t.Parallel()
	s := modelserver.Start(t, modelserver.Reply{Status: 429})
	d := New(Options{Limits: &ratelimit.Registry{Options: ratelimit.Options{Base: 5 * time.Millisecond, Cap: 20 * time.Millisecond}}, RateRetries: 2})
	res, err := d.Turn(context.Background(), turn(t, s))
	if !errors.Is(err, record.ErrRateLimit) || res.Status != engine.Failed {
		t.Fatalf("Turn = %+v, %v; want failed with ErrRateLimit", res, err)
	}
	if n := len(s.Requests()); n != 3 {
		t.Errorf("%d requests, want 3 (one and two retries)", n)
	}
}

// A quota fails fast: no retry, the provider's message, and later turns
// to the same key send nothing.
func TestQuotaFailsFast(t *testing.T) {
	t.Parallel()
	s := modelserver.Start(t)
	s.SetLimit(modelserver.Limit{Quota: true})
	d := New(Options{Limits: &ratelimit.Registry{}})
	for i := range 2 {
		start := time.Now()
		res, err := d.Turn(context.Background(), turn(t, s))
		q := (*record.QuotaError)(nil)
		if !errors.As(err, &q) || !strings.Contains(q.Message, "exceeded your current quota") || res.Status != engine.Failed {
			t.Fatalf("turn %d = %+v, %v; want a QuotaError with the provider's message", i, res, err)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("turn %d took %v to fail on a quota", i, took)
		}
	}
	if n := len(s.Requests()); n != 1 {
		t.Errorf("%d requests, want 1: once the quota is gone, nothing more is sent", n)
	}
}
