package claude

import (
	"context"
	"errors"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/modelserver"
)

// A 400 about billing_address.country is no quota: the turn fails, and the
// next turn to the key still starts Claude Code and reaches the server.
// The old code read "billing" in the CLI's output as an exhausted quota
// and closed the key for an hour.
func TestE2EBillingWordIsNoQuota(t *testing.T) {
	t.Parallel()
	d, s := e2e(t, modelserver.Reply{Status: 400, Message: "invalid value for field billing_address.country"}, modelserver.Reply{Text: "hello"})
	d.opts.BaseURL = s.URL() + "///" // a key of its own in the process-wide registry
	res, err := d.Turn(context.Background(), newTurn(t, "Say hello."))
	t.Logf("400: %v; %q", err, res.Diagnostics)
	if q := (*record.QuotaError)(nil); errors.As(err, &q) || errors.Is(err, record.ErrRateLimit) {
		t.Fatalf("Turn = %v; a 400 about billing_address is neither a quota nor a rate limit", err)
	}
	res, err = d.Turn(context.Background(), newTurn(t, "Say hello."))
	if err != nil || res.Status != engine.Completed {
		t.Fatalf("the next turn = %+v, %v; want it started and completed", res, err)
	}
}
