package engine

import (
	"context"
	"fmt"
	"time"
)

// LeafRunner runs the leaves that do work: this visit of this node with
// this input. The walker decides everything around a leaf — what it
// receives, its retries, its budgets before it starts, what its end means —
// and hands the leaf itself to a LeafRunner: LocalLeaves in this process
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
	Fact(f *Fact) error
	// Event records an event; events are for watching, errors are ignored.
	Event(e *Event) error
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

// LocalLeaves runs leaves in this process: agent turns through the driver
// each agent names, commands through Commands. It is immutable and safe
// for concurrent use.
type LocalLeaves struct {
	Drivers  map[string]Driver
	Commands Commander
}

var _ LeafRunner = LocalLeaves{}

// Turn runs t on its agent's driver under t.Timeout, and stops it (cause
// ErrBudget) once its live token count crosses a budget: t.Watch when the
// walker gave one, else t.TokensLeft. The answer comes back as the walker
// takes it (keep): at most AnswerLimit bytes with the file in t.Home that
// holds it whole, or, typed, whole up to TypedLimit.
func (l LocalLeaves) Turn(ctx context.Context, t *Turn) (*TurnResult, error) {
	d := l.Drivers[t.Agent.Driver]
	if d == nil {
		return nil, fmt.Errorf("%w: agent %q uses driver %q, which is not configured here", ErrUnavailable, t.Agent.Name, t.Agent.Driver)
	}
	tctx, cancelTimeout := context.WithTimeoutCause(ctx, t.Timeout, ErrTimeout)
	defer cancelTimeout()
	tctx, stop := context.WithCancelCause(tctx)
	defer stop(nil)
	watch := t.Watch
	if watch == nil && t.TokensLeft > 0 {
		watch = func(live int64) bool { return live > t.TokensLeft }
	}
	if watch != nil {
		turn, progress := *t, t.Progress
		turn.Progress = func(p Progress) {
			if p.Tokens > 0 && watch(p.Tokens) {
				stop(ErrBudget)
			}
			progress(p)
		}
		t = &turn
	}
	start := time.Now()
	res, err := d.Turn(tctx, t)
	if res != nil && res.Usage.WallMS <= 0 {
		res.Usage.WallMS = time.Since(start).Milliseconds()
	}
	if tctx.Err() != nil && ctx.Err() == nil {
		return res, context.Cause(tctx) // its own timeout, or a budget
	}
	if err == nil && res != nil && res.Status == Completed {
		if err := keep(res, t); err != nil {
			return res, fmt.Errorf("%w: storing the answer: %w", ErrUnavailable, err)
		}
	}
	return res, err
}

// Command runs c under c.Timeout.
func (l LocalLeaves) Command(ctx context.Context, c *Command) (*CommandResult, error) {
	if l.Commands == nil {
		return nil, fmt.Errorf("%w: no command runner is configured for run nodes", ErrUnavailable)
	}
	tctx, cancel := context.WithTimeoutCause(ctx, c.Timeout, ErrTimeout)
	defer cancel()
	res, err := l.Commands.Run(tctx, c)
	if tctx.Err() != nil && ctx.Err() == nil {
		return nil, context.Cause(tctx)
	}
	return res, err
}
