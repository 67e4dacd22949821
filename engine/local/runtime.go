package local

import (
	"context"
	"sync"
	"time"

	"github.com/sourcegraph/conc/pool"

	"github.com/flowrun/flow/engine"
)

// Runtime is the engine.Runtime of a run in this process: goroutines in
// conc pools, timers, channels. Its zero value is ready to use, and it
// holds nothing.
type Runtime struct{}

var _ engine.Runtime = Runtime{}

// Now is time.Now.
func (Runtime) Now() time.Time { return time.Now() }

// Sleep waits on a timer.
func (Runtime) Sleep(ctx context.Context, d time.Duration) error {
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
func (Runtime) Group(ctx context.Context, count, limit int, failFast error, task func(ctx context.Context, i int) bool) {
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
func (Runtime) NewMutex() engine.Mutex { return chanSemaphore(make(chan struct{}, 1)) }

// NewSemaphore returns a semaphore of n channel slots.
func (Runtime) NewSemaphore(n int) engine.Semaphore { return chanSemaphore(make(chan struct{}, n)) }

// NewLock returns a sync.Mutex.
func (Runtime) NewLock() engine.Locker { return &sync.Mutex{} }

// NewLatch returns a latch of a channel that opening closes.
func (Runtime) NewLatch() engine.Latch { return chanLatch(make(chan struct{})) }

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
