package engine

import (
	"context"
	"github.com/flowrun/flow/engine/record"
	"time"
)

// LeafRunner runs the leaves that do work: this visit of this node with
// this input. The walker decides everything around a leaf — what it
// receives, its retries, its budgets before it starts, what its end means —
// and hands the leaf itself to a LeafRunner: the local leaves in this process (package engine/local)
// (the default), or activities on Temporal workers (package temporal).
//
// Both methods block until the leaf ends or ctx is done, and must end
// everything they started before they return. A leaf ended by its own
// bound returns an error wrapping ErrTimeout (Turn.Timeout,
// Command.Timeout) or ErrBudget (Turn.Watch, Turn.TokensLeft), with
// whatever result it has: the walker counts a stopped turn's usage. A
// program that could not be started is an error wrapping ErrUnavailable;
// any other error is the provider's.
type LeafRunner interface {
	Turn(ctx context.Context, t *Turn) (*TurnResult, error)
	Command(ctx context.Context, c *Command) (*CommandResult, error)
}

// Recorder is where a walk's facts and events go: the run directory
// (*rundir.Writer) for a run in this process, a workflow's state for a
// Temporal run. Fact and Event are called from many tasks at once.
type Recorder interface {
	// Fact appends one fact of the journal; an error fails the visit.
	Fact(f *record.Fact) error
	// Event records an event; events are for watching, errors are ignored.
	Event(e *record.Event) error
	// Home names the home of a visit or memory scope at path, as the
	// LeafRunner of the same host takes it: a Turn's or Command's Home.
	Home(path string) string
	// RedactHome redacts what leaves wrote into the home of path since
	// the visit started; a host whose leaves redact where they run does
	// nothing.
	RedactHome(path string, since time.Time) error
	// WriteValues keeps a run's node values when it ends: each top-level
	// node's value by id and the input, as the expressions after the last
	// node see them (values.json in a run directory, the workflow's
	// result on Temporal). A sweep's score reads them; a block's output
	// is in no fact, so they cannot be had again without walking the run.
	WriteValues(values map[string]any) error
	// Finish records the run's output once it ended.
	Finish(output any) error
}
