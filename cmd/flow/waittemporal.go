package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/runner"
)

// signalTemporal delivers event to a run that lives on Temporal
// (docs/waits.md, On Temporal): a signal to its workflow, on the server,
// namespace and task queue its snapshot records (the configuration's
// where it records none). The run goes on by itself once its wait took
// the event; flow resume follows it.
func (a *app) signalTemporal(ctx context.Context, dir string, ref *rundir.TemporalRun, event string, data []byte) error {
	f := temporalFlags{address: ref.Address, namespace: ref.Namespace, taskQueue: ref.TaskQueue}
	b, done, err := a.backend(ctx, f)
	if err != nil {
		return err
	}
	defer done()
	already, err := runner.Deliver(ctx, b, dir, event, data, "flow signal")
	if errors.Is(err, runner.ErrUnconfirmed) {
		fmt.Fprintf(a.stderr, "signalled event %s to run %s on Temporal; %v: the run takes it once a worker runs (flow worker --temporal %s)\n", event, dirID(dir), err, ref.Address)
		return nil
	}
	if err := a.delivered(dir, event, already, err); err != nil {
		return err
	}
	if info, err := rundir.Inspect(dir); err == nil && info.Status != record.StatusRunning {
		fmt.Fprintf(a.stderr, "the run goes on on Temporal by itself; follow it with `flow resume %s`\n", info.ID)
	}
	return nil
}
