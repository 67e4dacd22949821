package runner

import (
	"context"
	"fmt"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/flows"
)

// Local walks runs in this process (local.Execute, local.Resume): the
// embedded default. Load says where a resumed run's agents come from and
// which drivers exist. Its zero value is ready to use.
type Local struct {
	Load flows.Options
}

var _ Backend = Local{}

// Start walks plan here.
func (Local) Start(ctx context.Context, plan *flows.Plan, host Host, opts engine.Options) (*engine.Result, error) {
	delegates(&host)
	return local.Execute(ctx, plan, host, opts)
}

// Resume continues the run in dir here.
func (l Local) Resume(ctx context.Context, dir string, host Host, opts engine.Options) (*engine.Result, error) {
	opts.RunID = "" // the run's own, as its RunsDir and WorkDir are
	delegates(&host)
	return local.Resume(ctx, dir, l.Load, host, opts)
}

// Attach has nothing to attach to: a local run is walked by the process
// that holds its lock.
func (Local) Attach(_ context.Context, _, id string, _ engine.Options) (*engine.Result, error) {
	return nil, fmt.Errorf("run %s: %w", id, ErrNotAttachable)
}

// Stop stops the run, however asked: it cannot go on without this process.
func (Local) Stop(cancel context.CancelCauseFunc, how Stopping) { stop(cancel, how, false) }

// Schedules is nil: this process fires the schedules.
func (Local) Schedules(string) Schedules { return nil }

// LiveCap is a cap of n live agent turns that runs walked in this process
// share (engine.Options.Live: a sweep's cells).
func LiveCap(n int) engine.Semaphore { return local.Runtime{}.NewSemaphore(n) }

// delegates gives a run in this process its delegation server, a socket
// in its run directory, unless the caller gave one (docs/delegation.md).
func delegates(host *Host) {
	if host.Delegates == nil {
		host.Delegates = local.Delegates
	}
}
