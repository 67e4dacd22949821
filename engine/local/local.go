// Package local is the local host of the walker: a run in this process,
// recorded in a run directory (docs/decisions.md, "A pure walker"). Its
// runtime is goroutines in conc pools, timers and channels; its leaves
// are the drivers and the command runner in this process; its record,
// redactor and working copies are the run directory's. Execute, Resume,
// Begin and Snapshot start, resume and record runs here; package runner
// is how the front ends reach them.
package local

import (
	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/rundir"
)

// NewHost is the host of a walk in this process recorded into w: rt (nil:
// Runtime{}) and leaves, w's redactor, and w's working copies, its leaves
// working in workDir.
func NewHost(rt engine.Runtime, leaves engine.LeafRunner, w *rundir.Writer, workDir string) engine.Host {
	return hostOf(rt, leaves, w, nil, w.Dir(), workDir)
}

// hostOf is NewHost whose turns' delegate calls del serves (nil: none),
// the run's directory named dir, its leaves working in workDir.
func hostOf(rt engine.Runtime, leaves engine.LeafRunner, w *rundir.Writer, del engine.Delegator, dir, workDir string) engine.Host {
	if rt == nil {
		rt = Runtime{}
	}
	return engine.NewHost(engine.Parts{Runtime: rt, Leaves: leaves, Recorder: w, Redactor: w.Secrets(), Workspace: workspace{w}, Delegator: del, RunDir: dir, WorkDir: workDir, Waiter: waiter{w.Dir()}})
}
