package engine

import (
	"errors"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
)

// replay indexes the last end fact of each visit of earlier attempts and
// takes back their sessions, their spending and what their turns cost
// (each agent's smallest and typical turn). It returns the notes of the
// workspace's Confine: worktrees the journal names outside the run.
func (r *runner) replay(facts []*Fact) (notes []string) {
	if facts == nil {
		return nil
	}
	r.ended = map[string]*Fact{}
	r.unfinished = record.Unfinished(facts)
	ws := record.Worktrees(facts)
	if r.workspace != nil {
		notes = r.workspace.Confine(ws)
	}
	r.wt.Replay(ws, facts)
	for _, f := range facts {
		r.children.ReplayChild(f)
		if f.Type != record.FactEnd {
			continue
		}
		r.ended[f.Visit] = f
		r.spent(f.Usage) // every attempt's usage counts, also of visits that run again
		r.ledger.Replay(f)
		if f.Scope != nil && f.Session != "" {
			r.session(*f.Scope).id = f.Session
		}
	}
	return notes
}

// replayed returns the recorded outcome of a leaf visit (agent, run, ask)
// that ended in an earlier attempt and must not run again: one that
// succeeded, or one whose failure the flow went on from (on_fail:
// continue). Leaves that were interrupted, cancelled, or failed the run run
// again.
func (r *runner) replayed(fr *frame, n *flows.Node, vars map[string]any, path string) (*outcome, bool) {
	f := r.ended[path]
	if f == nil || !isLeaf(n) {
		// Blocks are always entered again: their children replay, and
		// guards and lists are evaluated again over the same values, so the
		// block comes to the same end without running anything twice.
		return nil, false
	}
	ok := f.Succeeded()
	if !ok && (f.Error == nil || !outcomeStays(n, f.Error)) {
		return nil, false
	}
	o := &outcome{output: normalize(n.Output, f.Output), skipped: f.Skipped, usage: f.Usage, model: f.Model,
		attempts: f.Attempts, session: f.Session, scope: f.Scope, file: f.File, size: f.Size, wt: f.Worktree}
	if !ok {
		o.fail = f.Error
	}
	if n.Isolation {
		r.replayLanding(fr, n, vars, path, o)
	}
	r.emit(&Event{Type: record.EventVisitReplayed, Visit: path, Node: n.ID, Kind: n.Kind, OK: &ok, Error: o.fail})
	return o, true
}

// replayLanding gives a replayed isolated leaf its landing: the one an
// earlier attempt recorded, or — when the engine died between the visit's
// end and its landing, or the run failed on its conflict — a landing still
// to do (o.land), of the commit the visit's end recorded.
func (r *runner) replayLanding(fr *frame, n *flows.Node, vars map[string]any, path string, o *outcome) {
	var files []string
	if o.wt != nil {
		files = o.wt.Files
	}
	if o.fail != nil {
		if o.wt != nil {
			o.worktree = flows.WorktreeValue(o.wt.Branch, o.wt.Commit, files, false)
		}
		return
	}
	lf := r.wt.EarlierLanding(path)
	if lf == nil || lf.Worktree == nil || lf.Worktree.Land == record.LandConflict && !n.Continue {
		sc, fail := r.scopeFor(fr, n, vars, path)
		if fail != nil {
			o.fail = fail
			return
		}
		o.land = sc
		return
	}
	w := lf.Worktree
	o.worktree = flows.WorktreeValue(w.Branch, w.Commit, files, w.Land == record.Landed)
	if w.Land == record.LandConflict {
		o.fail = lf.Error
	}
}

// Causes of cancellation, read back with context.Cause to tell the kinds apart.
var (
	// ErrStopped is the cause to cancel a run with when its user interrupts
	// it (Ctrl-C, SIGTERM): running visits end as `stopped`.
	ErrStopped   = errors.New("the run was interrupted")
	errCancelled = errors.New("a sibling failed first (fail_fast)")
	errTimeout   = errors.New("timed out")
	errBudget    = errors.New("budget exhausted")
	// ErrTimeout is wrapped by a LeafRunner whose leaf its own timeout
	// ended: the visit fails `timeout`.
	ErrTimeout = errTimeout
	// ErrBudget is wrapped by a LeafRunner that stopped a turn whose live
	// tokens crossed a budget: the visit fails `budget`.
	ErrBudget = errBudget
)
