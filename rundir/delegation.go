package rundir

import "github.com/flowrun/flow/engine/record"

// DelegationTotals is, for each visit that started delegated children
// (docs/delegation.md), what it spent with its whole subtree: its own
// usage as its (last) end fact records it — the figure shown beside it —
// and every descendant's, each of every attempt, as the run's total
// counts them. Visits that delegated nothing are not in it: their total
// is their own.
func DelegationTotals(facts []*record.Fact) map[string]record.Usage {
	parent := map[string]string{}
	own := map[string]record.Usage{}  // every attempt's
	last := map[string]record.Usage{} // the last end fact's
	for _, f := range facts {
		switch {
		case f.Type == record.FactStart && f.Parent != "":
			parent[f.Visit] = f.Parent
		case f.Type == record.FactEnd && f.Usage != nil && f.Visit != "":
			u := own[f.Visit]
			u.Add(*f.Usage)
			own[f.Visit] = u
			last[f.Visit] = *f.Usage
		}
	}
	if len(parent) == 0 {
		return nil
	}
	out := map[string]record.Usage{}
	for child := range parent {
		for p, seen := parent[child], 0; p != "" && seen <= len(parent); p, seen = parent[p], seen+1 {
			if _, ok := out[p]; !ok {
				out[p] = last[p]
			}
			u := out[p]
			u.Add(own[child])
			out[p] = u
		}
	}
	return out
}
