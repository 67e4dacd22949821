package engine

import (
	"context"
	"fmt"
	"strings"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// order is the landing order of one visit of a map or parallel whose body
// isolates scopes: a scope in item (or branch) i lands once every item
// before i has ended — and with it, every landing in it. Scopes therefore
// land in item order and branch declaration order, whichever finished
// first, and a run lands the same history every time.
type order struct{ done []Latch }

func newOrder(rt Runtime, n int) *order {
	o := &order{done: make([]Latch, n)}
	for i := range o.done {
		o.done[i] = rt.NewLatch()
	}
	return o
}

// finish says item i has ended. It is called once per item, also for
// items skipped by fail_fast.
func (o *order) finish(i int) {
	if o != nil {
		o.done[i].Open()
	}
}

// gate is a place in an order: item i of o.
type gate struct {
	o *order
	i int
}

func (f *frame) withGate(o *order, i int) *frame {
	if o == nil {
		return f
	}
	cp := *f
	cp.gates = append(append([]gate{}, f.gates...), gate{o, i})
	return &cp
}

// waitTurn waits until every item before this one, in every order above
// it, has ended. No lock is held while it waits.
func (r *runner) waitTurn(ctx context.Context, fr *frame, visit string) *Failure {
	for _, g := range fr.gates {
		for j := 0; j < g.i; j++ {
			if g.o.done[j].IsOpen() {
				continue
			}
			r.emit(&Event{Type: record.EventProgress, Visit: visit, Activity: "waiting to land after the items before it"})
			if g.o.done[j].Wait(ctx) != nil {
				return cancelled(ctx, visit)
			}
		}
	}
	if ctx.Err() != nil { // a fail_fast sibling, or a stop, won the race
		return cancelled(ctx, visit)
	}
	return nil
}

// land lands a scope that ended well on the run's integration branch, in
// its turn, and journals how it went (FactLand, for visit). It returns the
// landing, and a failure: `conflict`, or why it could not land. A landing
// an earlier attempt recorded is not done again; a conflict is tried again
// when retry says the flow did not go on from it (from the branch's head:
// the user may have resolved it there).
func (r *runner) land(ctx context.Context, fr *frame, sc *wtScope, visit string, retry bool) (*record.Worktree, *Failure) {
	if f := r.waitTurn(ctx, fr, visit); f != nil {
		return nil, f
	}
	if prev := r.earlierLanding(visit); prev != nil && prev.Worktree != nil {
		if prev.Worktree.Land != record.LandConflict || !retry {
			return prev.Worktree, prev.Error
		}
	} else {
		retry = false
	}
	sc.mu.Lock()
	made := sc.made
	sc.mu.Unlock()
	if !made { // nothing ran in it: nothing to land
		return &record.Worktree{Scope: sc.name, Land: landing(sc.land, true)}, nil
	}
	ctx2 := context.WithoutCancel(ctx) // a landing runs to its end (Repo)
	rp, err := r.repo(ctx2, sc.repoDir)
	if err != nil {
		return nil, gitFailure(ctx2, sc.name, err)
	}
	if retry {
		if head, ok, err := rp.git.BranchHead(ctx2, sc.branch); err == nil && ok {
			sc.mu.Lock()
			sc.head = head
			sc.mu.Unlock()
		}
	}
	if sc.land == "rebase" { // a rebase runs in the worktree
		if _, f := r.open(ctx2, sc); f != nil {
			return nil, f
		}
	}
	r.emit(&Event{Type: record.EventProgress, Visit: visit, Activity: "landing on " + r.integration()})
	sc.mu.Lock()
	rec := &record.Worktree{Scope: sc.name, Branch: sc.branch, Commit: sc.head, Files: sc.files}
	var conflicts []string
	switch sc.land {
	case "none":
		rec.Land = record.LandKept
	case "rebase":
		l, lerr := rp.git.Rebase(ctx2, sc.path, visit)
		err, conflicts, rec.Onto = lerr, l.Conflicts, l.Onto
		if lerr == nil && len(l.Conflicts) == 0 {
			sc.head, rec.Commit = l.Head, l.Head
		}
	default:
		msg := fmt.Sprintf("flow: land %s\n\nWhat scope %s of run %s changed, landed in its turn.\n\nFlow-Run: %s\nFlow-Scope: %s\n", sc.name, sc.name, r.opts.RunID, r.opts.RunID, sc.name)
		l, lerr := rp.git.Merge(ctx2, sc.head, visit, msg)
		err, conflicts, rec.Onto = lerr, l.Conflicts, l.Onto
	}
	sc.mu.Unlock()
	if err != nil {
		return nil, gitFailure(ctx2, sc.name, fmt.Errorf("landing on %s: %w", r.integration(), err))
	}
	var fail *Failure
	switch {
	case rec.Land == record.LandKept:
	case len(conflicts) > 0:
		rec.Land = record.LandConflict
		fail = &Failure{Kind: schema.FailConflict, Visit: visit, Message: fmt.Sprintf(
			"the changes to %s conflict with what landed on %s before; the branch %s is kept: resolve it there (or on %s) and flow resume, or route the failure with on_fail: continue",
			strings.Join(conflicts, ", "), r.integration(), sc.branch, r.integration())}
	default:
		rec.Land = record.Landed
	}
	if err := r.dir.Fact(record.ScopeLanded{Time: r.rt.Now(), Visit: visit, Worktree: rec, Error: fail}.Fact()); err != nil {
		return nil, &Failure{Kind: schema.FailUnavailable, Message: err.Error()}
	}
	if fail != nil {
		r.emit(&Event{Type: record.EventNote, Visit: visit, Message: fmt.Sprintf("%s conflicts with %s; its branch %s is kept", visit, r.integration(), sc.branch)})
	}
	return rec, fail
}

func landing(mode string, ok bool) record.Landing {
	switch {
	case mode == "none":
		return record.LandKept
	case ok:
		return record.Landed
	}
	return record.LandConflict
}

func (r *runner) earlierLanding(visit string) *Fact {
	r.wt.mu.Lock()
	defer r.wt.mu.Unlock()
	return r.wt.landed[visit]
}

// endScope ends a block's isolated scope (a map item, a parallel branch, a
// loop, a flow call): one that ended well lands in its turn and its
// worktree goes (its branch too once landed); one that failed, or
// conflicted, keeps both for the user. It returns x.worktree of the scope
// and a failure of the landing.
func (r *runner) endScope(ctx context.Context, fr *frame, n *flows.Node, sc *wtScope, ok bool, visit string) (map[string]any, *Failure) {
	if !ok {
		return sc.value(false), nil
	}
	rec, fail := r.land(ctx, fr, sc, visit, !n.Continue)
	if rec == nil {
		return sc.value(false), fail
	}
	r.afterLanding(ctx, sc, rec)
	return flows.WorktreeValue(rec.Branch, rec.Commit, rec.Files, rec.Land == record.Landed), fail
}

// afterLanding removes what a landed (or kept) scope no longer needs.
func (r *runner) afterLanding(ctx context.Context, sc *wtScope, rec *record.Worktree) {
	if rec.Land == record.LandConflict || sc.memory {
		return
	}
	if err := r.remove(ctx, sc, rec.Land == record.Landed); err != nil {
		r.emit(&Event{Type: record.EventNote, Message: "warning: " + err.Error()})
	}
}

// closeOwned removes the worktrees of memory scopes whose scope, the visit
// at path, has ended, unless their last visit failed or conflicted.
func (r *runner) closeOwned(ctx context.Context, path string) {
	r.wt.mu.Lock()
	owned := r.wt.owned[path]
	delete(r.wt.owned, path)
	r.wt.mu.Unlock()
	for _, sc := range owned {
		sc.mu.Lock()
		keep, drop := sc.failed, sc.landed == record.Landed
		sc.mu.Unlock()
		if keep {
			continue
		}
		if err := r.remove(ctx, sc, drop); err != nil {
			r.emit(&Event{Type: record.EventNote, Message: "warning: " + err.Error()})
		}
	}
}
