package worktrees

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/schema"
)

// Order is the landing order of one visit of a map or parallel whose body
// isolates scopes: a scope in item (or branch) i lands once every item
// before i has ended — and with it, every landing in it. Scopes therefore
// land in item order and branch declaration order, whichever finished
// first, and a run lands the same history every time.
type Order struct{ done []Latch }

// NewOrder is the landing order of n items.
func (s *Scopes) NewOrder(n int) *Order {
	o := &Order{done: make([]Latch, n)}
	for i := range o.done {
		o.done[i] = s.h.NewLatch()
	}
	return o
}

// Finish says item i has ended. It is called once per item, also for
// items skipped by fail_fast; a nil order does nothing.
func (o *Order) Finish(i int) {
	if o != nil {
		o.done[i].Open()
	}
}

// Gate is a place in an order: item i of o.
type Gate struct {
	o *Order
	i int
}

// With is gates with item i of o added (gates itself when o is nil).
func With(gates []Gate, o *Order, i int) []Gate {
	if o == nil {
		return gates
	}
	return append(append([]Gate{}, gates...), Gate{o, i})
}

// waitTurn waits until every item before this one, in every order above
// it, has ended. No lock is held while it waits.
func (s *Scopes) waitTurn(ctx context.Context, gates []Gate, visit string) *record.Failure {
	for _, g := range gates {
		for j := 0; j < g.i; j++ {
			if g.o.done[j].IsOpen() {
				continue
			}
			s.h.Emit(&record.Event{Type: record.EventProgress, Visit: visit, Activity: "waiting to land after the items before it"})
			if g.o.done[j].Wait(ctx) != nil {
				return s.h.Cancelled(ctx, visit)
			}
		}
	}
	if ctx.Err() != nil { // a fail_fast sibling, or a stop, won the race
		return s.h.Cancelled(ctx, visit)
	}
	return nil
}

// land lands a scope that ended well on the run's integration branch, in
// its turn, and journals how it went (FactLand, for visit). It returns the
// landing, and a failure: `conflict`, or why it could not land. A landing
// an earlier attempt recorded is not done again; a conflict is tried again
// when retry says the flow did not go on from it (from the branch's head:
// the user may have resolved it there).
func (s *Scopes) land(ctx context.Context, gates []Gate, sc *Scope, visit string, retry bool) (*record.Worktree, *record.Failure) {
	if f := s.waitTurn(ctx, gates, visit); f != nil {
		return nil, f
	}
	if prev := s.EarlierLanding(visit); prev != nil && prev.Worktree != nil {
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
	rp, err := s.repo(ctx2, sc.repoDir)
	if err != nil {
		return nil, s.gitFailure(ctx2, sc.name, err)
	}
	if retry {
		if head, ok, err := rp.git.BranchHead(ctx2, sc.branch); err == nil && ok {
			sc.mu.Lock()
			sc.head = head
			sc.mu.Unlock()
		}
	}
	if sc.land == "rebase" { // a rebase runs in the worktree
		if _, f := s.Open(ctx2, sc); f != nil {
			return nil, f
		}
	}
	s.h.Emit(&record.Event{Type: record.EventProgress, Visit: visit, Activity: "landing on " + s.Integration()})
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
		msg := fmt.Sprintf("flow: land %s\n\nWhat scope %s of run %s changed, landed in its turn.\n\nFlow-Run: %s\nFlow-Scope: %s\n", sc.name, sc.name, s.h.RunID, s.h.RunID, sc.name)
		l, lerr := rp.git.Merge(ctx2, sc.head, visit, msg)
		err, conflicts, rec.Onto = lerr, l.Conflicts, l.Onto
	}
	sc.mu.Unlock()
	if err != nil {
		return nil, s.gitFailure(ctx2, sc.name, fmt.Errorf("landing on %s: %w", s.Integration(), err))
	}
	var fail *record.Failure
	switch {
	case rec.Land == record.LandKept:
	case len(conflicts) > 0:
		rec.Land = record.LandConflict
		fail = &record.Failure{Kind: schema.FailConflict, Visit: visit, Message: fmt.Sprintf(
			"the changes to %s conflict with what landed on %s before; the branch %s is kept: resolve it there (or on %s) and flow resume, or route the failure with on_fail: continue",
			strings.Join(conflicts, ", "), s.Integration(), sc.branch, s.Integration())}
	default:
		rec.Land = record.Landed
	}
	if err := s.h.Fact(record.ScopeLanded{Time: s.h.Now(), Visit: visit, Worktree: rec, Error: fail}.Fact()); err != nil {
		return nil, &record.Failure{Kind: schema.FailUnavailable, Message: err.Error()}
	}
	if fail != nil {
		s.h.Emit(&record.Event{Type: record.EventNote, Visit: visit, Message: fmt.Sprintf("%s conflicts with %s; its branch %s is kept", visit, s.Integration(), sc.branch)})
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

func (s *Scopes) EarlierLanding(visit string) *record.Fact {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.landed[visit]
}

// EndScope ends a block's isolated scope (a map item, a parallel branch, a
// loop, a flow call): one that ended well lands in its turn and its
// worktree goes (its branch too once landed); one that failed, or
// conflicted, keeps both for the user. It returns x.worktree of the scope
// and a failure of the landing.
func (s *Scopes) EndScope(ctx context.Context, gates []Gate, retry bool, sc *Scope, ok bool, visit string) (map[string]any, *record.Failure) {
	if !ok {
		return sc.Value(false), nil
	}
	rec, fail := s.land(ctx, gates, sc, visit, retry)
	if rec == nil {
		return sc.Value(false), fail
	}
	s.afterLanding(ctx, sc, rec)
	return flows.WorktreeValue(rec.Branch, rec.Commit, rec.Files, rec.Land == record.Landed), fail
}

// afterLanding removes what a landed (or kept) scope no longer needs.
func (s *Scopes) afterLanding(ctx context.Context, sc *Scope, rec *record.Worktree) {
	if rec.Land == record.LandConflict || sc.memory {
		return
	}
	if err := s.remove(ctx, sc, rec.Land == record.Landed); err != nil {
		s.h.Emit(&record.Event{Type: record.EventNote, Message: "warning: " + err.Error()})
	}
}

// CloseOwned removes the worktrees of memory scopes whose scope, the visit
// at path, has ended, unless their last visit failed or conflicted.
func (s *Scopes) CloseOwned(ctx context.Context, path string) {
	s.mu.Lock()
	owned := s.owned[path]
	delete(s.owned, path)
	s.mu.Unlock()
	for _, sc := range owned {
		sc.mu.Lock()
		keep, drop := sc.failed, sc.landed == record.Landed
		sc.mu.Unlock()
		if keep {
			continue
		}
		if err := s.remove(ctx, sc, drop); err != nil {
			s.h.Emit(&record.Event{Type: record.EventNote, Message: "warning: " + err.Error()})
		}
	}
}

// LandLeaf lands the scope of an isolated agent or run visit whose end is
// journaled (files: what the visit changed), and returns x.worktree of the
// visit and the failure of its landing (`conflict`, or why it could not
// land).
func (s *Scopes) LandLeaf(ctx context.Context, gates []Gate, sc *Scope, visit string, files []string) (map[string]any, *record.Failure) {
	rec, fail := s.land(ctx, gates, sc, visit, true)
	sc.mu.Lock()
	sc.failed = fail != nil
	if rec != nil {
		sc.landed = rec.Land
	}
	sc.mu.Unlock()
	if rec == nil {
		return sc.Value(false), fail
	}
	s.afterLanding(ctx, sc, rec)
	return flows.WorktreeValue(rec.Branch, rec.Commit, files, rec.Land == record.Landed), fail
}

// Replay takes back what earlier attempts recorded of each scope (ws),
// and the landings (land facts) among facts.
func (s *Scopes) Replay(ws []*record.Worktree, facts []*record.Fact) {
	for _, w := range ws {
		s.earlier[w.Scope] = w
		// A memory scope's worktree goes when its owner ends, also when
		// every visit of it replays.
		if owner, _, memory := strings.Cut(w.Scope, "@"); memory && w.Path != "" && !w.Removed {
			s.Get(w.Scope, "", "", true, owner)
		}
	}
	for _, f := range facts {
		if f.Type == record.FactLand {
			s.landed[f.Visit] = f
		}
	}
}

// Named are the names of the opened repositories' directories by their
// content, for visit keys: pairs of directory and name.
func (s *Scopes) Named() [][2]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.named)
}
