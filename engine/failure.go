package engine

import "github.com/flowrun/flow/engine/record"

// The walker's vocabulary (package engine/record), under the names the
// engine and its drivers use.
type (
	// Failure is why a visit failed (docs/flow-files.md, Failures).
	Failure = record.Failure
	// Usage is what agents reported (docs/drivers.md).
	Usage = record.Usage
	// Fact is one line of the journal.
	Fact = record.Fact
	// Event is one event of the run, as OnEvent and events.jsonl get it.
	Event = record.Event
	// Worktree is a recorded worktree of an isolated scope.
	Worktree = record.Worktree
	// Reused says where a reused visit's outcome came from.
	Reused = record.Reused
)

// InputError is a run input that does not fit the flow's declared input.
// The command line reports it with exit code 2, before anything runs.
// Err, a *schema.ValueError, names the field.
type InputError struct {
	Msg string
	Err error
}

func (e *InputError) Error() string { return e.Msg }

func (e *InputError) Unwrap() error { return e.Err }

// RefusedError says the run was refused before it started (e.g. an ask with
// no default in an unattended run).
type RefusedError struct{ Msg string }

func (e *RefusedError) Error() string { return e.Msg }
