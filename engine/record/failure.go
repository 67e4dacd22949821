package record

import (
	"fmt"

	"github.com/flowrun/flow/schema"
)

// Failure is why a visit failed: a kind from the closed set of docs/flow-files.md, Failures, a
// message, the visit path and the node's position in the file.
type Failure struct {
	Kind    schema.FailKind `json:"kind"`
	Message string          `json:"message"`
	Visit   string          `json:"visit"`
	Pos     schema.Pos      `json:"-"`
	// Cause is the failure below this one, for kind `child`.
	Cause *Failure `json:"cause,omitempty"`
}

// Root returns the failure at the bottom of a chain of `child` failures:
// the visit that failed first.
func (f *Failure) Root() *Failure {
	for f.Cause != nil {
		f = f.Cause
	}
	return f
}

func (f *Failure) Error() string {
	loc := ""
	if f.Pos.IsValid() {
		loc = " (" + f.Pos.String() + ")"
	}
	return fmt.Sprintf("%s: %s: %s%s", f.Visit, f.Kind, f.Message, loc)
}
