package rundir

import "github.com/flowrun/flow/engine/record"

// Saving is what a run saved by reusing recorded visits
// (docs/reuse-and-tests.md): how many visits, and what they had spent
// when they ran.
type Saving struct {
	Visits int
	Usage  record.Usage
}

// Saved sums the reused visits of facts.
func Saved(facts []*record.Fact) Saving {
	var s Saving
	for _, f := range facts {
		if f.Type == record.FactEnd && f.Reused != nil {
			s.Visits++
			if f.Reused.Saved != nil {
				s.Usage.Add(*f.Reused.Saved)
			}
		}
	}
	return s
}
