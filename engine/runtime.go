package engine

import (
	"context"
	"time"
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
