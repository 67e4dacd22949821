package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/engine/worktrees"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// newScopes are the run's isolated scopes (package engine/worktrees) on
// the walk's host.
func (r *runner) newScopes() *worktrees.Scopes {
	return worktrees.New(worktrees.Host{Workspace: r.workspace, RunID: r.opts.RunID, Starts: r.opts.Repos,
		Fact:      func(f *record.Fact) error { return r.dir.Fact(f) },
		Emit:      r.emit,
		Now:       func() time.Time { return r.rt.Now() },
		Cancelled: cancelled,
		NewLock:   func() worktrees.Locker { return r.rt.NewLock() },
		NewMutex:  func() worktrees.Mutex { return r.rt.NewMutex() },
		NewLatch:  func() worktrees.Latch { return r.rt.NewLatch() }})
}

// work runs a visit where it belongs (docs/worktrees.md): an isolated agent or run
// node in its own scope's worktree (landed by visit once its end is
// journaled), an isolated loop or flow call in one scope landed when it
// ends, a leaf inside an isolated scope in that scope's worktree, and
// anything else as it is.
func (r *runner) work(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) *outcome {
	leaf := n.Kind == schema.KindAgent || n.Kind == schema.KindRun
	switch {
	case n.Isolation && leaf:
		return r.isolatedLeaf(ctx, fr, n, vars, path)
	case leaf && fr.scope != nil:
		return r.inWorktree(ctx, fr, fr.scope, n, vars, path)
	case n.Isolation && (n.Kind == schema.KindLoop || n.Kind == schema.KindFlow):
		sc, fail := r.scopeFor(fr, n, vars, path)
		if fail != nil {
			return &outcome{fail: fail, worktree: flows.NoWorktree()}
		}
		o := r.dispatch(ctx, fr.inScope(sc), n, vars, path)
		wt, lfail := r.wt.EndScope(ctx, fr.gates, !n.Continue, sc, o.fail == nil, path)
		o.worktree = wt
		if o.fail == nil {
			o.fail = lfail
		}
		return o
	}
	return r.dispatch(ctx, fr, n, vars, path)
}

// isolatedLeaf runs an isolated agent or run node in its own scope's
// worktree, landed by visit once its end is journaled.
func (r *runner) isolatedLeaf(ctx context.Context, fr *frame, n *flows.Node, vars map[string]any, path string) *outcome {
	sc, fail := r.scopeFor(fr, n, vars, path)
	if fail != nil {
		return &outcome{fail: fail, worktree: flows.NoWorktree()}
	}
	if sc.Memory() {
		if err := sc.Use().Lock(ctx); err != nil {
			return &outcome{fail: cancelled(ctx, path), worktree: flows.NoWorktree()}
		}
		defer sc.Use().Unlock()
	}
	o := r.inWorktree(ctx, fr, sc, n, vars, path)
	if o.fail == nil {
		o.land = sc // after the end is journaled: see visit
	} else {
		o.worktree = sc.Failed()
	}
	return o
}

// scopeFor returns the scope of an isolated node's visit at path: the
// visit's own, or for an agent with memory the memory scope's.
func (r *runner) scopeFor(fr *frame, n *flows.Node, vars map[string]any, name string) (*worktrees.Scope, *record.Failure) {
	dir, err := r.repoDir(n, vars)
	if err != nil {
		return nil, &record.Failure{Kind: schema.FailCondition, Message: err.Error()}
	}
	if an := n.AsAgent(); an != nil && an.Memory != "" {
		owner := fr.scopes[an.Memory]
		return r.wt.Get(owner+"@"+an.Agent.Name, n.Land, dir, true, owner), nil
	}
	return r.wt.Get(name, n.Land, dir, false, ""), nil
}

// repoDir is the directory whose repository an isolated node works in.
func (r *runner) repoDir(n *flows.Node, vars map[string]any) (string, error) {
	if n.Repo == nil {
		return r.rootDir, nil
	}
	s, err := render(n.Repo, vars)
	if err != nil {
		return "", err
	}
	s = strings.TrimSpace(s)
	if s == "" {
		return "", fmt.Errorf("repo: %s gave an empty directory", n.Repo.Source)
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(r.rootDir, s)
	}
	return s, nil
}

// inWorktree runs a leaf in the scope's worktree, and commits what it
// changed when the journal will keep its outcome: a resume then finds the
// worktree as the journal left it, and runs again only what did not end.
func (r *runner) inWorktree(ctx context.Context, fr *frame, sc *worktrees.Scope, n *flows.Node, vars map[string]any, path string) *outcome {
	dir, fail := r.wt.Open(ctx, sc)
	if fail != nil {
		return &outcome{fail: fail}
	}
	o := r.dispatch(ctx, fr.inDir(dir, sc.Branch()), n, vars, path)
	if outcomeStays(n, o.fail) {
		cp, err := r.wt.Checkpoint(ctx, sc, path)
		if err != nil {
			if o.fail == nil {
				o.fail = &record.Failure{Kind: schema.FailUnavailable, Message: err.Error()}
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
	var files []string
	if o.wt != nil {
		files = o.wt.Files
	}
	var fail *record.Failure
	o.worktree, fail = r.wt.LandLeaf(ctx, fr.gates, sc, path, files)
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
func outcomeStays(n *flows.Node, fail *record.Failure) bool {
	if fail == nil {
		return true
	}
	if !n.Continue || !staysInfra(n, fail) {
		return false
	}
	switch fail.Kind {
	case schema.FailStopped, schema.FailCancelled, schema.FailChild, schema.FailWaiting:
		return false
	}
	return true
}
