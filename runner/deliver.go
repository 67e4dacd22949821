package runner

import (
	"context"
	"fmt"
	"time"

	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/temporal"
)

// Deliverer is a backend that delivers events to the waits of runs it
// walks elsewhere: a run on Temporal takes them as signals
// (docs/waits.md, On Temporal).
type Deliverer interface {
	Deliver(ctx context.Context, dir, event string, data []byte, by string) (already bool, err error)
}

// ErrUnconfirmed says an event was signalled to a run on Temporal but no
// worker answered whether the run took it (temporal.ErrUnconfirmed).
var ErrUnconfirmed = temporal.ErrUnconfirmed

// Deliver delivers event, with its JSON data, to the run in dir, as
// docs/waits.md says: into its run directory (rundir.Deliver), or, for a
// run that lives on Temporal, to its workflow through b. It says whether
// the run had the event already with the same data; other data is an
// error wrapping rundir.ErrSignalConflict.
func Deliver(ctx context.Context, b Backend, dir, event string, data []byte, by string) (already bool, err error) {
	if snap, err := rundir.ReadSnapshot(dir); err == nil && snap.Temporal != nil {
		d, ok := b.(Deliverer)
		if !ok {
			return false, fmt.Errorf("run %s lives on Temporal at %s: deliver its events there (--temporal %s, or temporal.address)", snap.Run, snap.Temporal.Address, snap.Temporal.Address)
		}
		already, err := d.Deliver(ctx, dir, event, data, by)
		if err == nil {
			// The run kept this data: a copy in its directory tells a
			// server that let go of it while it waits to follow it
			// again (serve's waker reads signals/, as for a local run).
			_, _ = rundir.Deliver(dir, event, data, by, time.Now())
		}
		return already, err
	}
	return rundir.Deliver(dir, event, data, by, time.Now())
}

// Deliver signals the event to the run's workflow (temporal.Client.Deliver).
func (t *Temporal) Deliver(ctx context.Context, dir, event string, data []byte, by string) (bool, error) {
	return t.c.Deliver(ctx, dir, event, data, by)
}

// Deliver is the inner backend's, for a backend that delivers.
func (h *hosted) Deliver(ctx context.Context, dir, event string, data []byte, by string) (bool, error) {
	return Deliver(ctx, h.inner, dir, event, data, by)
}
