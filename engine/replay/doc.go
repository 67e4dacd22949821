// Package replay is what a resumed walk knows of its run's earlier
// attempts (Journal: the visits that ended, the tool calls left unended)
// and the keys of its leaf visits (Keys, docs/reuse-and-tests.md), which
// a recording is matched by. It does no effect of its own.
package replay

// Locker is a lock for a short section that waits on nothing (the
// host's Runtime.NewLock).
type Locker interface {
	Lock()
	Unlock()
}
