package local

import (
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/rundir"
)

// NewSnapshot records plan as a run of it starts, with input and s.
func NewSnapshot(runID string, plan *flows.Plan, input any, s rundir.Settings) *rundir.Snapshot {
	snap := &rundir.Snapshot{Run: runID, Flow: plan.Root.Name, File: plan.Root.File, Flows: map[string]rundir.SnapshotFlow{},
		Agents: flows.EncodeAgents(plan.Agents), Input: input, Settings: s}
	for name, f := range plan.Flows {
		snap.Flows[name] = rundir.SnapshotFlow{File: f.File, Source: string(f.Doc.Source)}
	}
	return snap
}
