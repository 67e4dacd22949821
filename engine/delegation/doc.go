// Package delegation is the walker's book of delegation
// (docs/delegation.md): the tree of one delegating visit (Tree), each
// visit in it that may start children and its limits (Parent), the
// children earlier attempts started and what a child's start records
// (Registry), and a turn's place under the run's cap on live turns,
// which it lends to its children while it waits for them (Slot). The
// walker runs the children; this package decides what they may be. It
// takes its locks from the walk's host, through the small interfaces
// below, and does no effect of its own.
package delegation

import "context"

// Locker is a lock for a short section that waits on nothing (the
// host's Runtime.NewLock).
type Locker interface {
	Lock()
	Unlock()
}

// Mutex is a mutex that may be held while a child runs (the host's
// Runtime.NewMutex). Lock returns context.Cause(ctx) if ctx ends first.
type Mutex interface {
	Lock(ctx context.Context) error
	Unlock()
}

// Semaphore is the run-wide cap on live turns (the host's
// Runtime.NewSemaphore).
type Semaphore interface {
	Acquire(ctx context.Context) error
	Release()
}
