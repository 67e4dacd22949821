package pi

import (
	"context"
	"errors"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/modelserver"
)

// pi refused with 429 ends the turn rate_limit, not provider.
func TestE2ERateLimited(t *testing.T) {
	t.Parallel()
	d, _ := e2e(t, modelserver.Reply{Status: 429})
	res, err := d.Turn(context.Background(), newTurn(t, "Say hello."))
	t.Logf("429: %v; %q", err, res.Diagnostics)
	if !errors.Is(err, record.ErrRateLimit) || res.Status != engine.Failed {
		t.Fatalf("Turn = %+v, %v; want failed with ErrRateLimit", res, err)
	}
}
