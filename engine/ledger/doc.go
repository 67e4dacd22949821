// Package ledger is the walker's book of budgets (docs/resume-and-budgets.md):
// what a run knows of the price of a turn (Ledger), the meter of each
// budget (Meter), and one turn's reservations under the budgets above it
// (Booking). It takes its locks from the walk's host, through the two
// small interfaces below, so that it runs alike in this process and in a
// Temporal workflow; it does no effect of its own.
package ledger

import "context"

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
