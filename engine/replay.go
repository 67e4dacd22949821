package engine

import (
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// Resume continues an earlier run in its own directory: visits that ended
// there are not run again (SPEC 5).
type Resume struct {
	// Facts is the run's journal as read by ReadJournal.
	Facts []Fact
}

// ended indexes the last end fact of each visit of a resumed run.
func (r *runner) loadReplay(facts []Fact) {
	r.ended = map[string]*Fact{}
	r.store.remember(pointers(facts))
	for i := range facts {
		f := &facts[i]
		if f.Type != "end" {
			continue
		}
		r.ended[f.Visit] = f
		// Every attempt's usage counts, also of visits that run again.
		if f.Usage != nil {
			r.usage.add(f.Visit, f.Node, "", *f.Usage)
		}
		if f.Scope != "" && f.Session != "" {
			r.session(f.Scope).id = f.Session
		}
	}
}

// replayed returns the recorded outcome of a leaf visit (agent, run, ask)
// that ended in an earlier attempt and must not run again: one that
// succeeded, or one whose failure the flow went on from (on_fail:
// continue). Leaves that were interrupted, cancelled, or failed the run run
// again.
func (r *runner) replayed(n *flows.Node, path string) (*outcome, bool) {
	f := r.ended[path]
	if f == nil || !(isLeaf(n) || n.Kind == schema.KindAsk) {
		// Blocks are always entered again: their children replay, and
		// guards and lists are evaluated again over the same values, so the
		// block comes to the same end without running anything twice.
		return nil, false
	}
	ok := f.OK != nil && *f.OK
	if !ok {
		if !n.Continue || f.Error == nil {
			return nil, false
		}
		switch f.Error.Kind {
		case schema.FailStopped, schema.FailCancelled, schema.FailChild:
			return nil, false
		}
	}
	o := &outcome{output: normalize(n.Output, f.Output), skipped: f.Skipped, usage: f.Usage, model: f.Model,
		attempts: f.Attempts, session: f.Session, scope: f.Scope}
	if !ok {
		o.fail = f.Error
	}
	r.emit(&Event{Type: "visit.replayed", Visit: path, Node: n.ID, Kind: string(n.Kind), OK: &ok, Error: o.fail})
	return o, true
}
