package engine

import (
	"context"
	"errors"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/engine/replay"
	"github.com/flowrun/flow/flows"
)

// newKeys makes the keys of the leaf visits of the run in dir (package
// engine/replay).
func (r *runner) newKeys(dir string) *replay.Keys {
	return &replay.Keys{RunDir: dir, RunID: r.opts.RunID, Repeat: r.opts.Repeat,
		Named: r.wt.Named, Now: func() time.Time { return r.rt.Now() },
		Tree: func(ctx context.Context, dir string) string {
			if r.workspace == nil {
				return ""
			}
			return r.workspace.Tree(ctx, dir)
		}}
}

// visitKey is the key of a visit of leaf n (replay.Keys), in frame fr.
func (r *runner) visitKey(ctx context.Context, fr *frame, n *flows.Node, path, model, prompt string, sess *session, c *Command) *flows.VisitKey {
	v := replay.Visit{Path: path, Model: model, Prompt: prompt, WorkDir: r.workDir(fr), Isolated: fr.scope != nil}
	if sess != nil {
		v.Chain = sess.chain
	}
	if c != nil {
		v.Command, v.Argv, v.Script, v.Env, v.Dir = true, c.Argv, c.Script, c.Env, c.Dir
	}
	return r.keys.Of(ctx, n, v)
}

// chained moves a memory scope's chain on past a visit that succeeded.
func chained(sess *session, k *flows.VisitKey) {
	if sess != nil && k != nil {
		sess.chain = flows.Chain(sess.chain, k.Key)
	}
}

// toolLog is the tool-call journal of a turn of visit path: the first
// turn after a resume takes the calls its earlier attempt left unended.
func (r *runner) toolLog(path string) *record.ToolLog {
	return &record.ToolLog{Earlier: r.journal.Unfinished(path), Record: func(c record.ToolCall) error {
		return r.dir.Fact(record.ToolCalled{Time: r.rt.Now(), Visit: path, Tool: c}.Fact())
	}}
}

// replay indexes the last end fact of each visit of earlier attempts and
// takes back their sessions, their spending and what their turns cost
// (each agent's smallest and typical turn). It returns the notes of the
// workspace's Confine: worktrees the journal names outside the run.
func (r *runner) replay(facts []*record.Fact) (notes []string) {
	if facts == nil {
		return nil
	}
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
	f := r.journal.Ended(path)
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
	r.emit(&record.Event{Type: record.EventVisitReplayed, Visit: path, Node: n.ID, Kind: n.Kind, OK: &ok, Error: o.fail})
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
