package temporal

import (
	"errors"
	"fmt"
	"testing"

	"github.com/flowrun/flow/engine/record"
)

// A refusal for now and a quota cross from a worker to the walker as they
// left the driver: the walker fails the visit rate_limit, a quota with its
// message.
func TestEndedCarriesRateLimits(t *testing.T) {
	err := ended(fmt.Errorf("the server answered 429: %w", record.ErrRateLimit)).err()
	if !errors.Is(err, record.ErrRateLimit) || err.Error() != "the server answered 429: rate limited" {
		t.Errorf("a 429 came back as %v", err)
	}
	err = ended(&record.QuotaError{Message: "no credit"}).err()
	if q := (*record.QuotaError)(nil); !errors.As(err, &q) || q.Message != "no credit" || !record.RateLimited(err).Quota() {
		t.Errorf("a quota came back as %v", err)
	}
}
