package engine

import (
	"context"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// work runs a visit where it belongs (docs/worktrees.md): an isolated agent or run
// node in its own scope's worktree (landed by visit once its end is
// journaled), an isolated loop or flow call in one scope landed when it
// ends, a leaf inside an isolated scope in that scope's worktree, and
// anything else as it is.
func (r *runner) work(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) *outcome {
	leaf := n.Kind == schema.KindAgent || n.Kind == schema.KindRun
	switch {
	case n.Isolation && leaf:
		sc, fail := r.scopeFor(fr, n, vars, path)
		if fail != nil {
			return &outcome{fail: fail, worktree: flows.NoWorktree()}
		}
		if sc.memory {
			if err := sc.use.Lock(ctx); err != nil {
				return &outcome{fail: cancelled(ctx, path), worktree: flows.NoWorktree()}
			}
			defer sc.use.Unlock()
		}
		o := r.inWorktree(ctx, fr, sc, n, vars, path)
		if o.fail == nil {
			o.land = sc // after the end is journaled: see visit
		} else {
			sc.mu.Lock()
			sc.failed = true
			sc.mu.Unlock()
			o.worktree = sc.value(false)
		}
		return o
	case leaf && fr.scope != nil:
		return r.inWorktree(ctx, fr, fr.scope, n, vars, path)
	case n.Isolation && (n.Kind == schema.KindLoop || n.Kind == schema.KindFlow):
		sc, fail := r.scopeFor(fr, n, vars, path)
		if fail != nil {
			return &outcome{fail: fail, worktree: flows.NoWorktree()}
		}
		o := r.dispatch(ctx, fr.inScope(sc), n, vars, path)
		wt, lfail := r.endScope(ctx, fr, n, sc, o.fail == nil, path)
		o.worktree = wt
		if o.fail == nil {
			o.fail = lfail
		}
		return o
	}
	return r.dispatch(ctx, fr, n, vars, path)
}

// inWorktree runs a leaf in the scope's worktree, and commits what it
// changed when the journal will keep its outcome: a resume then finds the
// worktree as the journal left it, and runs again only what did not end.
func (r *runner) inWorktree(ctx context.Context, fr *frame, sc *wtScope, n *flows.Node, vars map[string]any, path string) *outcome {
	dir, fail := r.open(ctx, sc)
	if fail != nil {
		return &outcome{fail: fail}
	}
	sc.mu.Lock()
	branch := sc.branch
	sc.mu.Unlock()
	o := r.dispatch(ctx, fr.inDir(dir, branch), n, vars, path)
	if outcomeStays(n, o.fail) {
		cp, err := r.checkpoint(ctx, sc, path)
		if err != nil {
			if o.fail == nil {
				o.fail = &Failure{Kind: schema.FailUnavailable, Message: err.Error()}
			}
			return o
		}
		o.wt = cp
	}
	return o
}

// landLeaf lands an isolated agent or run visit whose end is journaled:
// its work is recorded before it lands, so that a resume never does it
// twice; the landing (or the conflict that fails the visit) follows in a
// land fact.
func (r *runner) landLeaf(ctx context.Context, fr *frame, n *flows.Node, path string, o *outcome) {
	sc := o.land
	o.land = nil
	rec, fail := r.land(ctx, fr, sc, path, true)
	var files []string
	if o.wt != nil {
		files = o.wt.Files
	}
	sc.mu.Lock()
	sc.failed = fail != nil
	if rec != nil {
		sc.landed = rec.Land
	}
	sc.mu.Unlock()
	if rec != nil {
		r.afterLanding(ctx, sc, rec)
		o.worktree = flows.WorktreeValue(rec.Branch, rec.Commit, files, rec.Land == record.Landed)
	} else {
		o.worktree = sc.value(false)
	}
	if fail != nil {
		if fail.Visit == "" {
			fail.Visit = path
		}
		fail.Pos = n.Pos
		o.fail = fail
	}
}

// outcomeStays reports whether the journal keeps a leaf's outcome for a resume:
// it succeeded, or the flow went on from its failure (on_fail: continue)
// and the failure is its own. What a kept visit changed in a worktree is
// committed; what a visit that will run again changed is not.
func outcomeStays(n *flows.Node, fail *Failure) bool {
	if fail == nil {
		return true
	}
	if !n.Continue {
		return false
	}
	switch fail.Kind {
	case schema.FailStopped, schema.FailCancelled, schema.FailChild, schema.FailWaiting:
		return false
	}
	return true
}
