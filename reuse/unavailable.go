package reuse

import (
	"fmt"

	"github.com/flowrun/flow/engine"
)

// unavailableError is an error of kind unavailable whose text does not
// repeat the kind: the failure's kind says it already, and its message
// is the text (no "unavailable: unavailable:").
type unavailableError struct{ err error }

func (e *unavailableError) Error() string   { return e.err.Error() }
func (e *unavailableError) Unwrap() []error { return []error{engine.ErrUnavailable, e.err} }

// unavailable is fmt.Errorf(format, args...) as an error of kind
// unavailable (errors.Is it engine.ErrUnavailable).
func unavailable(format string, args ...any) error {
	return &unavailableError{err: fmt.Errorf(format, args...)}
}
