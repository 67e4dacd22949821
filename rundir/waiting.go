package rundir

import "github.com/flowrun/flow/engine/record"

// StatusWaiting is a run that ended with a wait not yet satisfied
// (docs/waits.md): it holds no process and goes on when resumed.
const StatusWaiting = record.StatusWaiting

// WaitingOn is one wait a waiting run waits on: the wait visit and what
// it waits for.
type WaitingOn struct {
	Visit string `json:"visit"`
	record.Wait
}

// waitingOn are the waits of a run that ended waiting (record.Waits).
func waitingOn(facts []*record.Fact) []WaitingOn {
	var out []WaitingOn
	for _, f := range record.Waits(facts) {
		out = append(out, WaitingOn{Visit: f.Visit, Wait: *f.Wait})
	}
	return out
}

// waitsOnTemporal says a run walked on Temporal that has not ended waits
// there now (docs/waits.md, On Temporal): its workflow holds the wait,
// so the run is running (its mirror attached) or not followed (none),
// never ended waiting, and its waits are those journaled and not ended.
func waitsOnTemporal(dir string, status record.Status, facts []*record.Fact) bool {
	if status != record.StatusRunning && status != record.StatusInterrupted || len(record.Waits(facts)) == 0 {
		return false
	}
	snap, err := ReadSnapshot(dir)
	return err == nil && snap.Temporal != nil
}
