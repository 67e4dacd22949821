package temporal

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
)

// A run that ended on Temporal has no values.json from its walk: the
// engine writes a run's node values only into a run directory of the
// walking process, and the workflow has none. A sweep's score reads
// them, so the mirror rebuilds them here. This goes once the engine hands
// the values to any Recorder.

// errReplayRan ends a replay that would have run a leaf.
var errReplayRan = errors.New("a leaf had no recorded end")

// replayValues rebuilds the node values of the run of snap from its whole
// journal: it walks the run's plan again in this process as a resume
// would, so every leaf replays its recorded end and every block comes to
// the same end, and nothing runs — a leaf without a recorded end fails
// the replay. The walk records into a scratch run directory, removed
// after.
func replayValues(ctx context.Context, snap *rundir.Snapshot, load LoadOptions, facts []*rundir.Fact) (map[string]any, error) {
	plan, diags := snap.Load(flows.Options{DefaultDriver: load.DefaultDriver, Drivers: load.Drivers})
	if diags.HasErrors() {
		return nil, fmt.Errorf("the run's snapshot does not load:\n%s", diags.Error())
	}
	scratch, err := os.MkdirTemp("", "flow-values-")
	if err != nil {
		return nil, fmt.Errorf("replaying the run for its node values: %w", err)
	}
	defer os.RemoveAll(scratch)
	w, err := rundir.Create(scratch, snap.Run)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	timeout, turnTimeout := snap.Settings.Durations()
	opts := engine.Options{
		RunID:       snap.Run,
		WorkDir:     snap.Settings.WorkDir,
		Input:       snap.Input,
		Settings:    flows.Settings{Model: snap.Settings.Model, Models: snap.Settings.Models, Timeout: timeout, TurnTimeout: turnTimeout},
		Concurrency: snap.Settings.Concurrency,
		Config:      snap.Settings.Config,
		Leaves:      refuseLeaves{cancel: cancel},
	}
	_, walkErr := engine.Walk(ctx, plan, opts, w, facts)
	if err := w.Close(); walkErr == nil {
		walkErr = err
	}
	switch {
	case context.Cause(ctx) != nil:
		return nil, fmt.Errorf("replaying the run for its node values: %w", context.Cause(ctx))
	case walkErr != nil:
		return nil, fmt.Errorf("replaying the run for its node values: %w", walkErr)
	}
	return rundir.ReadValues(w.Dir())
}

// refuseLeaves is the LeafRunner of a replay: a leaf asked to run ends
// the replay.
type refuseLeaves struct{ cancel context.CancelCauseFunc }

func (l refuseLeaves) Turn(context.Context, *engine.Turn) (*engine.TurnResult, error) {
	l.cancel(errReplayRan)
	return nil, fmt.Errorf("%w: %w", engine.ErrUnavailable, errReplayRan)
}

func (l refuseLeaves) Command(context.Context, *engine.Command) (*engine.CommandResult, error) {
	l.cancel(errReplayRan)
	return nil, fmt.Errorf("%w: %w", engine.ErrUnavailable, errReplayRan)
}
