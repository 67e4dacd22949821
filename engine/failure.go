package engine

import (
	"errors"
	"fmt"
	"reflect"

	"github.com/flowrun/flow/schema"
)

// Failure is why a visit failed: a kind from the closed set of SPEC 3.5, a
// message, the visit path and the node's position in the file.
type Failure struct {
	Kind    schema.FailKind `json:"kind"`
	Message string          `json:"message"`
	Visit   string          `json:"visit"`
	Pos     schema.Pos      `json:"-"`
	// Cause is the failure below this one, for kind `child`.
	Cause *Failure `json:"cause,omitempty"`
}

// Root returns the failure at the bottom of a chain of `child` failures: the
// visit that failed first.
func (f *Failure) Root() *Failure { return innermost(f) }

func (f *Failure) Error() string {
	loc := ""
	if f.Pos.IsValid() {
		loc = " (" + f.Pos.String() + ")"
	}
	return fmt.Sprintf("%s: %s: %s%s", f.Visit, f.Kind, f.Message, loc)
}

// value is how a failure appears to expressions: x.error.kind and friends.
func (f *Failure) value() map[string]any {
	if f == nil {
		return noError
	}
	return map[string]any{"kind": string(f.Kind), "message": f.Message, "visit": f.Visit}
}

// noError is the error value of every node that did not fail. It is shared:
// values in an expression environment are never modified.
var noError = map[string]any{"kind": "", "message": "", "visit": ""}

// noErrorJSON is noError encoded. Every item of a map's output holds
// noError twice (its own and its node's), and encoding it from the map
// was half of writing a large map's output.json.
const noErrorJSON = `{"kind":"","message":"","visit":""}`

// isNoError reports whether m is noError itself (not an equal map).
func isNoError(m map[string]any) bool {
	return reflect.ValueOf(m).UnsafePointer() == reflect.ValueOf(noError).UnsafePointer()
}

// Causes of cancellation, read back with context.Cause to tell the kinds apart.
var (
	// ErrStopped is the cause to cancel a run with when its user interrupts
	// it (Ctrl-C, SIGTERM): running visits end as `stopped`.
	ErrStopped   = errors.New("the run was interrupted")
	errCancelled = errors.New("a sibling failed first (fail_fast)")
	errTimeout   = errors.New("timed out")
	errBudget    = errors.New("budget exhausted")
)

// InputError is a run input that does not fit the flow's declared input.
// The command line reports it with exit code 2, before anything runs.
type InputError struct{ Msg string }

func (e *InputError) Error() string { return e.Msg }

// RefusedError says the run was refused before it started (e.g. an ask with
// no default in an unattended run).
type RefusedError struct{ Msg string }

func (e *RefusedError) Error() string { return e.Msg }
