package engine

import (
	"context"
	"sync"
	"time"

	"github.com/sourcegraph/conc/pool"
)

// Runtime is where a walk happens: the few things the walker does that
// block or read the clock go through it. The local runtime (the default)
// is this process: goroutines in conc pools, timers, channels. A Temporal
// workflow gives its own (package temporal), so that the same walker
// runs deterministically on workflow coroutines and timers.
//
// An Asker's wait is bounded on the wall clock: a Runtime other than the
// local one runs unattended (Options.Asker nil), so asks take their
// defaults.
//
// A Runtime other than the local one may carry state of its own in ctx
// (a workflow's context); the walker hands every ctx it got from the
// Runtime back to it, and cancels a ctx only through Group or when its
// caller does.
type Runtime interface {
	// Now is the time of the walk: the wall clock locally, the
	// workflow's clock in a workflow.
	Now() time.Time
	// Sleep waits d, or until ctx ends; it returns context.Cause(ctx)
	// when ctx ended first.
	Sleep(ctx context.Context, d time.Duration) error
	// Group runs task for i in [0, count), at most limit at once (0: all
	// at once), each with a ctx of the group, and returns when every task
	// it started has returned. With failFast set, the first task that
	// reports a failure cancels the group's ctx with cause failFast, and
	// tasks not started by then are skipped (never called).
	Group(ctx context.Context, count, limit int, failFast error, task func(ctx context.Context, i int) (failed bool))
	// NewMutex returns a mutex that may be held across a turn (a memory
	// scope's session serves one visit at a time).
	NewMutex() Mutex
	// NewSemaphore returns a semaphore of n slots (the run-wide cap on
	// live turns).
	NewSemaphore(n int) Semaphore
	// NewLatch returns a latch, closed: the landing order of isolated
	// scopes waits on one per item.
	NewLatch() Latch
	// NewLock returns a lock for the walker's own state, held only for
	// a short section that waits on nothing (no turn, no other lock of
	// the host's): a mutex where tasks run at once, nothing where they
	// take turns (workflow coroutines).
	NewLock() Locker
}

// Locker is a Runtime's lock for short sections (Runtime.NewLock).
type Locker interface {
	Lock()
	Unlock()
}

// Latch is a Runtime's one-way gate: once opened it stays open. Wait
// returns context.Cause(ctx) if ctx ends before it opens.
type Latch interface {
	Open()
	IsOpen() bool
	Wait(ctx context.Context) error
}

// Mutex is a Runtime's mutex. Lock returns context.Cause(ctx) if ctx ends
// before the mutex is had.
type Mutex interface {
	Lock(ctx context.Context) error
	Unlock()
}

// Semaphore is a Runtime's counting semaphore. Acquire returns
// context.Cause(ctx) if ctx ends before a slot is had.
type Semaphore interface {
	Acquire(ctx context.Context) error
	Release()
}

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
