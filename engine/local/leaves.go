package local

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/rundir"
)

// Leaves runs leaves in this process: agent turns through the driver
// each agent names, commands through Commands. It is immutable and safe
// for concurrent use.
type Leaves struct {
	Drivers  map[string]engine.Driver
	Commands engine.Commander
}

var _ engine.LeafRunner = Leaves{}

// Turn runs t on its agent's driver under t.Timeout, and stops it (cause
// engine.ErrBudget) once its live token count crosses a budget: t.Watch
// when the walker gave one, else t.TokensLeft. The answer comes back as
// the walker takes it (settleAnswer): at most engine.AnswerLimit bytes
// with the file in t.Home that holds it whole, or, typed, whole up to
// engine.TypedLimit.
func (l Leaves) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	d := l.Drivers[t.Agent.Driver]
	if d == nil {
		return nil, fmt.Errorf("%w: agent %q uses driver %q, which is not configured here", engine.ErrUnavailable, t.Agent.Name, t.Agent.Driver)
	}
	tctx, cancelTimeout := context.WithTimeoutCause(ctx, t.Timeout, engine.ErrTimeout)
	defer cancelTimeout()
	tctx, stop := context.WithCancelCause(tctx)
	defer stop(nil)
	watch := t.Watch
	if watch == nil && t.TokensLeft > 0 {
		watch = func(live int64) bool { return live > t.TokensLeft }
	}
	if t.Affords == nil && t.TokensLeft > 0 {
		left := t.TokensLeft
		turn := *t
		turn.Affords = func(live, next int64) bool { return live < left && left-live >= next }
		t = &turn
	}
	if watch != nil {
		turn, progress := *t, t.Progress
		turn.Progress = func(p engine.Progress) {
			if p.Tokens > 0 && watch(p.Tokens) {
				stop(engine.ErrBudget)
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
	if err == nil && res != nil && res.Status == engine.Completed {
		if err := settleAnswer(res, t); err != nil {
			return res, fmt.Errorf("%w: storing the answer: %w", engine.ErrUnavailable, err)
		}
	}
	return res, err
}

// Command runs c under c.Timeout.
func (l Leaves) Command(ctx context.Context, c *engine.Command) (*engine.CommandResult, error) {
	if l.Commands == nil {
		return nil, fmt.Errorf("%w: no command runner is configured for run nodes", engine.ErrUnavailable)
	}
	tctx, cancel := context.WithTimeoutCause(ctx, c.Timeout, engine.ErrTimeout)
	defer cancel()
	res, err := l.Commands.Run(tctx, c)
	if tctx.Err() != nil && ctx.Err() == nil {
		return nil, context.Cause(tctx)
	}
	return res, err
}

// bound makes res's answer what the walker holds: its text, at most
// engine.AnswerLimit bytes, and the file and size of the whole when there
// is more. A driver that stored a long answer gives its file; an Output
// longer than engine.AnswerLimit without one is written to a file here,
// through secrets.
func bound(res *engine.TurnResult, home, agent string, secrets *secret.Redactor) (text, file string, size int64, err error) {
	if res.File != "" {
		size := res.Size
		if size <= 0 {
			if st, err := os.Stat(res.File); err == nil {
				size = st.Size()
			}
		}
		return engine.UTF8Prefix(res.Output, engine.AnswerLimit), res.File, size, nil
	}
	if len(res.Output) <= engine.AnswerLimit {
		return res.Output, "", 0, nil
	}
	file, err = rundir.StoreAnswer(home, agent, res.Output, secrets)
	return engine.UTF8Prefix(res.Output, engine.AnswerLimit), file, int64(len(res.Output)), err
}

// settleAnswer makes a completed turn's answer what the walker takes: at
// most engine.AnswerLimit bytes and the file that holds it whole (bound),
// or, for a typed answer, the whole answer up to engine.TypedLimit — read
// back from the driver's file if it stored one — so that it can be parsed
// wherever the walk happens. A longer typed answer keeps its file, and
// the walker refuses it.
func settleAnswer(res *engine.TurnResult, t *engine.Turn) error {
	if t.OutputSchema != nil && res.File != "" && res.Size <= engine.TypedLimit {
		b, err := os.ReadFile(res.File)
		if err != nil {
			return fmt.Errorf("reading the answer: %w", err)
		}
		res.Output, res.File, res.Size = string(b), "", 0
	}
	if t.OutputSchema != nil && res.File == "" && len(res.Output) <= engine.TypedLimit {
		return nil
	}
	var err error
	res.Output, res.File, res.Size, err = bound(res, t.Home, t.Agent.Name, t.Secrets)
	return err
}
