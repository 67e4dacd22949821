package engine

import "github.com/flowrun/flow/engine/record"

// killedUsage is the usage a visit at path starts with: what its killed
// attempts had reported spending before the engine died (Options.Killed),
// marked partial, and counted against every budget above it, as any
// earlier attempt's usage is (docs/resume-and-budgets.md).
func (r *runner) killedUsage(fr *frame, path string) *record.Usage {
	n := r.opts.Killed[path]
	if n <= 0 {
		return &record.Usage{}
	}
	u := &record.Usage{Input: &n, Partial: true}
	r.ledger.Charge(fr.meters, u)
	return u
}
