// This file is the local host's runtime and leaves, not yet moved to
// package engine/local: goroutines in conc pools, timers and channels;
// drivers and commands in this process; answers stored in a visit's home
// (docs/decisions.md, "A pure walker").

package engine

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/rundir"
)

// LocalRuntime is the Runtime of a run in this process, the default. Its
// zero value is ready to use, and it holds nothing.
type LocalRuntime struct{}

var _ Runtime = LocalRuntime{}

// Now is time.Now.
func (LocalRuntime) Now() time.Time { return time.Now() }

// Sleep waits on a timer.
func (LocalRuntime) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

// Group runs the tasks in a conc pool that it waits for. conc's own
// cancellation has no cause, and a visit must tell `cancelled` from
// `stopped`, so the group cancels with failFast itself.
func (LocalRuntime) Group(ctx context.Context, count, limit int, failFast error, task func(ctx context.Context, i int) bool) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	p := pool.New().WithContext(ctx)
	if limit > 0 {
		p = p.WithMaxGoroutines(limit)
	}
	for i := range count {
		p.Go(func(ctx context.Context) error {
			if failFast != nil && ctx.Err() != nil {
				return nil // skipped: a sibling failed first
			}
			if task(ctx, i) && failFast != nil {
				cancel(failFast)
			}
			return nil
		})
	}
	_ = p.Wait() // tasks report failures through their own results, never as errors
}

// NewMutex returns a mutex of one channel slot.
func (LocalRuntime) NewMutex() Mutex { return chanSemaphore(make(chan struct{}, 1)) }

// NewSemaphore returns a semaphore of n channel slots.
func (LocalRuntime) NewSemaphore(n int) Semaphore { return chanSemaphore(make(chan struct{}, n)) }

// NewLock returns a sync.Mutex.
func (LocalRuntime) NewLock() Locker { return &sync.Mutex{} }

// NewLatch returns a latch of a channel that opening closes.
func (LocalRuntime) NewLatch() Latch { return chanLatch(make(chan struct{})) }

type chanLatch chan struct{}

func (l chanLatch) Open() { close(l) }

func (l chanLatch) IsOpen() bool {
	select {
	case <-l:
		return true
	default:
		return false
	}
}

func (l chanLatch) Wait(ctx context.Context) error {
	select {
	case <-l:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// chanSemaphore is a semaphore (and, of one slot, a mutex) whose waits
// end with ctx.
type chanSemaphore chan struct{}

func (s chanSemaphore) Acquire(ctx context.Context) error {
	select {
	case s <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (s chanSemaphore) Release() { <-s }

func (s chanSemaphore) Lock(ctx context.Context) error { return s.Acquire(ctx) }

func (s chanSemaphore) Unlock() { s.Release() }

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
// takes it (settleAnswer): at most AnswerLimit bytes with the file in t.Home that
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
		if err := settleAnswer(res, t); err != nil {
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

// bound makes res's answer a reply. A driver that stored a long answer
// gives its file; an Output longer than AnswerLimit without one is written
// to a file here, through secrets.
func bound(res *TurnResult, home, agent string, secrets *secret.Redactor) (reply, error) {
	if res.File != "" {
		size := res.Size
		if size <= 0 {
			if st, err := os.Stat(res.File); err == nil {
				size = st.Size()
			}
		}
		return reply{text: utf8Prefix(res.Output, AnswerLimit), file: res.File, size: size}, nil
	}
	if len(res.Output) <= AnswerLimit {
		return reply{text: res.Output}, nil
	}
	rp := reply{text: utf8Prefix(res.Output, AnswerLimit), size: int64(len(res.Output))}
	var err error
	rp.file, err = rundir.StoreAnswer(home, agent, res.Output, secrets)
	return rp, err
}

// settleAnswer makes a completed turn's answer what the walker takes: at most
// AnswerLimit bytes and the file that holds it whole (bound), or, for a
// typed answer, the whole answer up to TypedLimit — read back from the
// driver's file if it stored one — so that it can be parsed wherever the
// walk happens. A longer typed answer keeps its file, and the walker
// refuses it.
func settleAnswer(res *TurnResult, t *Turn) error {
	if t.OutputSchema != nil && res.File != "" && res.Size <= TypedLimit {
		b, err := os.ReadFile(res.File)
		if err != nil {
			return fmt.Errorf("reading the answer: %w", err)
		}
		res.Output, res.File, res.Size = string(b), "", 0
	}
	if t.OutputSchema != nil && res.File == "" && len(res.Output) <= TypedLimit {
		return nil
	}
	rp, err := bound(res, t.Home, t.Agent.Name, t.Secrets)
	res.Output, res.File, res.Size = rp.text, rp.file, rp.size
	return err
}
