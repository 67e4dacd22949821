package codex

import (
	"context"
	"errors"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/modelserver"
)

// Codex refused with 429 ends the turn rate_limit, not provider; a quota
// ends it with the provider's message.
func TestCodexRateLimitedAndQuota(t *testing.T) {
	bin := clitest.Binary(t, "codex")
	s := modelserver.Start(t, modelserver.Reply{Status: 429})
	res, err := New(Options{Binary: bin, MaxRetries: 1, CodexHome: t.TempDir()}).Turn(context.Background(), turn(t, s))
	t.Logf("429: %v; %q", err, res.Diagnostics)
	if !errors.Is(err, record.ErrRateLimit) || res.Status != engine.Failed {
		t.Fatalf("Turn = %+v, %v; want failed with ErrRateLimit", res, err)
	}
	q := modelserver.Start(t)
	q.SetLimit(modelserver.Limit{Quota: true})
	res, err = New(Options{Binary: bin, MaxRetries: 1, CodexHome: t.TempDir()}).Turn(context.Background(), turn(t, q))
	t.Logf("quota: %v; %q", err, res.Diagnostics)
	if qe := (*record.QuotaError)(nil); !errors.As(err, &qe) {
		t.Fatalf("Turn = %+v, %v; want a QuotaError", res, err)
	}
}
