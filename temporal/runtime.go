package temporal

import (
	"context"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/flowrun/flow/engine"
)

// The walker's context.Context carries the workflow.Context of the
// coroutine it runs on, so that the runtime and the leaves can block and
// schedule on it. Cancellation stays deterministic: a context.Context of a
// walk is only cancelled from workflow code (a group's fail_fast, or the
// coroutine that turns the workflow's cancellation into engine.ErrStopped),
// never by a timer or a goroutine of its own. context.WithCancelCause over
// such contexts starts no goroutine.
type workflowKey struct{}

func withWorkflow(ctx context.Context, w workflow.Context) context.Context {
	return context.WithValue(ctx, workflowKey{}, w)
}

func workflowOf(ctx context.Context) workflow.Context {
	return ctx.Value(workflowKey{}).(workflow.Context)
}

// settle is called when a wait on w ended because w was cancelled. Every
// cancellation of a workflow context is paired with one of the walk's own
// context (with the cause the walker reads), which may come a coroutine
// later: settle waits for it, deterministically, and returns its cause.
func settle(ctx context.Context, w workflow.Context) error {
	if ctx.Err() == nil {
		d, _ := workflow.NewDisconnectedContext(w)
		_ = workflow.Await(d, func() bool { return ctx.Err() != nil })
	}
	return context.Cause(ctx)
}

// runtime is the engine.Runtime of a walk in a workflow: coroutines,
// timers, the workflow's clock, its mutexes and semaphores.
type runtime struct{ root workflow.Context }

var _ engine.Runtime = runtime{}

func (rt runtime) Now() time.Time { return workflow.Now(rt.root) }

func (rt runtime) Sleep(ctx context.Context, d time.Duration) error {
	w := workflowOf(ctx)
	if err := workflow.Sleep(w, d); err != nil {
		return settle(ctx, w)
	}
	return nil
}

// Group runs each task on a coroutine of its own. Its slots are taken in
// order by the calling coroutine, as a conc pool's are. On a failure with
// failFast, it cancels the group's context with that cause and the
// group's workflow context, which cancels the siblings' activities.
func (rt runtime) Group(ctx context.Context, count, limit int, failFast error, task func(ctx context.Context, i int) bool) {
	w := workflowOf(ctx)
	gctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	gw, wcancel := workflow.WithCancel(w)
	defer wcancel()
	// Waiting for slots and for the tasks is never cut short: every task
	// that starts is waited for, as a conc pool does.
	wait, _ := workflow.NewDisconnectedContext(w)
	var slots workflow.Semaphore
	if limit > 0 {
		slots = workflow.NewSemaphore(w, int64(limit))
	}
	wg := workflow.NewWaitGroup(w)
	for i := range count {
		if slots != nil {
			_ = slots.Acquire(wait, 1) // a disconnected context is never cancelled
		}
		wg.Add(1)
		workflow.Go(gw, func(c workflow.Context) {
			defer wg.Done()
			if slots != nil {
				defer slots.Release(1)
			}
			if failFast != nil && gctx.Err() != nil {
				return // skipped: a sibling failed first
			}
			if task(withWorkflow(gctx, c), i) && failFast != nil {
				cancel(failFast)
				wcancel()
			}
		})
	}
	wg.Wait(wait)
}

func (rt runtime) NewMutex() engine.Mutex { return mutex{workflow.NewMutex(rt.root)} }

func (rt runtime) NewSemaphore(n int) engine.Semaphore {
	return semaphore{workflow.NewSemaphore(rt.root, int64(n))}
}

// NewLock returns a lock that does nothing: coroutines run one at a
// time and switch only where they block, which a short section never
// does.
func (rt runtime) NewLock() engine.Locker { return noLock{} }

type noLock struct{}

func (noLock) Lock()   {}
func (noLock) Unlock() {}

// NewLatch returns a latch that coroutines await.
func (rt runtime) NewLatch() engine.Latch { return &latch{} }

// latch is a flag that workflow.Await waits on: coroutines run one at a
// time, so it needs no lock.
type latch struct{ open bool }

func (l *latch) Open() { l.open = true }

func (l *latch) IsOpen() bool { return l.open }

func (l *latch) Wait(ctx context.Context) error {
	w := workflowOf(ctx)
	if err := workflow.Await(w, func() bool { return l.open }); err != nil {
		return settle(ctx, w)
	}
	return nil
}

type mutex struct{ m workflow.Mutex }

func (m mutex) Lock(ctx context.Context) error {
	w := workflowOf(ctx)
	if err := m.m.Lock(w); err != nil {
		return settle(ctx, w)
	}
	return nil
}

func (m mutex) Unlock() { m.m.Unlock() }

type semaphore struct{ s workflow.Semaphore }

func (s semaphore) Acquire(ctx context.Context) error {
	w := workflowOf(ctx)
	if err := s.s.Acquire(w, 1); err != nil {
		return settle(ctx, w)
	}
	return nil
}

func (s semaphore) Release() { s.s.Release(1) }
