// Package local is the local host of the walker: a run in this process,
// recorded in a run directory. Its entry points are the engine's, under
// the names callers keep while the host's effects move here from package
// engine (docs/decisions.md, "A pure walker"): a caller that starts,
// resumes or records runs locally names local.Execute, local.Resume,
// local.Begin and local.Snapshot, and what they do moves behind them
// without the caller changing.
package local

import (
	"context"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
)

type (
	// Runtime is this process: goroutines in conc pools, timers,
	// channels.
	Runtime = engine.LocalRuntime
	// Leaves runs agent turns through the drivers and commands through
	// the command runner, in this process.
	Leaves = engine.LocalLeaves
)

// Execute runs plan to its end in this process, into a new run directory,
// and returns how it ended (engine.Options says what each option does).
// An error means the run could not start; a run that started and failed
// returns a Result with OK false. When Execute returns, every process
// the run started has ended.
func Execute(ctx context.Context, plan *flows.Plan, opts engine.Options) (*engine.Result, error) {
	return engine.Execute(ctx, plan, opts)
}

// Resume continues the run in dir from its first unended visit, in this
// process; visits that ended keep their recorded outcome.
func Resume(ctx context.Context, dir string, load flows.Options, opts engine.Options) (*engine.Result, error) {
	return engine.Resume(ctx, dir, load, opts)
}

// Begin does what Execute does before it walks, for a run walked
// elsewhere and recorded here (a Temporal run); the caller closes the
// Writer.
func Begin(ctx context.Context, plan *flows.Plan, opts engine.Options) (*rundir.Writer, *rundir.Snapshot, error) {
	return engine.Begin(ctx, plan, opts)
}

// Snapshot is the snapshot Execute would record, without a run directory
// (a Temporal Schedule's runs).
func Snapshot(plan *flows.Plan, opts engine.Options) (*rundir.Snapshot, error) {
	return engine.Snapshot(plan, opts)
}

// NewHost is the host of a walk in this process recorded into w: rt (nil:
// Runtime{}) and leaves, w's redactor, and w's working copies.
func NewHost(rt engine.Runtime, leaves engine.LeafRunner, w *rundir.Writer) engine.Host {
	if rt == nil {
		rt = Runtime{}
	}
	return engine.NewHost(engine.Parts{Runtime: rt, Leaves: leaves, Recorder: w, Redactor: w.Secrets(), Workspace: engine.LocalWorkspace(w)})
}
