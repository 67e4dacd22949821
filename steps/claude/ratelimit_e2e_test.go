package claude

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/modelserver"
)

// Claude Code refused with 429 ends the turn rate_limit, not provider.
func TestE2ERateLimited(t *testing.T) {
	t.Parallel()
	d, s := e2e(t, modelserver.Reply{Status: 429})
	d.opts.BaseURL = s.URL() + "/" // a key of its own in the process-wide registry
	res, err := d.Turn(context.Background(), newTurn(t, "Say hello."))
	t.Logf("429: %v; %q", err, res.Diagnostics)
	if !errors.Is(err, record.ErrRateLimit) || res.Status != engine.Failed {
		t.Fatalf("Turn = %+v, %v; want failed with ErrRateLimit", res, err)
	}
}

// A quota ends the turn with the provider's message; the next turn to the
// key fails at once, without starting Claude Code.
func TestE2EQuota(t *testing.T) {
	t.Parallel()
	d, s := e2e(t)
	s.SetLimit(modelserver.Limit{Quota: true})
	d.opts.BaseURL = s.URL() + "//"
	for i := range 2 {
		start := time.Now()
		res, err := d.Turn(context.Background(), newTurn(t, "Say hello."))
		q := (*record.QuotaError)(nil)
		if !errors.As(err, &q) || !strings.Contains(strings.ToLower(q.Message), "credit balance") {
			t.Fatalf("turn %d = %+v, %v; want a QuotaError with the provider's message", i, res, err)
		}
		t.Logf("turn %d: quota in %v: %s", i, time.Since(start), q.Message)
	}
	if n := len(s.LimitLog()); n != 1 {
		t.Errorf("%d generation requests, want 1: after a quota the CLI is not started", n)
	}
}
