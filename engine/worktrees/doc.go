// Package worktrees is the walker's book of isolated scopes
// (docs/worktrees.md): each scope's working copy, made on first use and
// checkpointed after each visit that stays, the repositories they are
// made from, and the landing of each scope on the run's integration
// branch in its turn (Order). Where the working copies live and how git
// makes them is the host's Workspace; this package decides what is made,
// kept, landed and removed, and when, and journals it through the
// walk's host. It does no effect of its own.
package worktrees

import (
	"context"
	"time"

	"github.com/flowrun/flow/engine/record"
)

// Locker is a lock for a short section that waits on nothing (the
// host's Runtime.NewLock).
type Locker interface {
	Lock()
	Unlock()
}

// Mutex is a mutex that may be held across a turn (the host's
// Runtime.NewMutex). Lock returns context.Cause(ctx) if ctx ends first.
type Mutex interface {
	Lock(ctx context.Context) error
	Unlock()
}

// Latch is a one-way gate (the host's Runtime.NewLatch).
type Latch interface {
	Open()
	IsOpen() bool
	Wait(ctx context.Context) error
}

// Host is what the scopes need of the walk: where they are, the run
// they are of, and how facts, events and failures are made there.
type Host struct {
	Workspace Workspace
	RunID     string
	// Starts maps a repository's top-level directory to the commit the
	// run started at (the snapshot's Repos).
	Starts map[string]string
	Fact   func(f *record.Fact) error
	Emit   func(e *record.Event)
	Now    func() time.Time
	// Cancelled is the failure of the visit at path whose ctx ended.
	Cancelled func(ctx context.Context, path string) *record.Failure
	NewLock   func() Locker
	NewMutex  func() Mutex
	NewLatch  func() Latch
}
