package record

import (
	"errors"
	"strings"

	"github.com/flowrun/flow/schema"
)

// ErrRateLimit is wrapped by a driver whose provider refused the turn for
// now: a 429, or an overload answer (Anthropic's 529 overloaded_error,
// OpenAI's 503 "overloaded"). The engine maps it to the failure kind
// `rate_limit`, which is about the infrastructure and never a verdict on
// the model (docs/flow-files.md); a sweep runs such a cell again. It lives
// here, beside Failure, so that drivers, the engine and Temporal's wire
// share it.
var ErrRateLimit = errors.New("rate limited")

// QuotaError is a refusal that will not pass within the run: a daily or
// billing quota, as the provider says (OpenAI's insufficient_quota). It
// wraps ErrRateLimit, so it fails the visit `rate_limit`, with a message
// that starts with schema.QuotaPrefix; a sweep does not run the cell again
// and its report says so (docs/sweeps.md).
type QuotaError struct {
	// Message is the provider's own message.
	Message string
}

func (e *QuotaError) Error() string { return schema.QuotaPrefix + e.Message }

// Unwrap makes a QuotaError an ErrRateLimit.
func (e *QuotaError) Unwrap() error { return ErrRateLimit }

// Quota says whether the failure is a quota that will not return within
// the run, rather than a refusal for now.
func (f *Failure) Quota() bool {
	return f != nil && f.Kind == schema.FailRateLimit && strings.HasPrefix(f.Message, schema.QuotaPrefix)
}

// RateLimited is the failure of a turn that ended on err, which wraps
// ErrRateLimit: a quota keeps its own message whole.
func RateLimited(err error) *Failure {
	if q := (*QuotaError)(nil); errors.As(err, &q) {
		return &Failure{Kind: schema.FailRateLimit, Message: q.Error()}
	}
	return &Failure{Kind: schema.FailRateLimit, Message: err.Error()}
}
