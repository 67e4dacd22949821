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
