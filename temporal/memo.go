package temporal

import "github.com/flowrun/flow/rundir"

// memo is what the Temporal UI shows of a run without registration: set by
// the client that starts it (client.go, schedule.go), outside the
// workflow, so it may name the run directory's snapshot.
func memo(snap *rundir.Snapshot, trigger string) map[string]any {
	return map[string]any{"flow": snap.Flow, "trigger": trigger, "file": snap.File}
}
