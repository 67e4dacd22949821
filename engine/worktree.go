package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/ordered"
	"github.com/flowrun/flow/schema"
)

// worktrees are a run's isolated scopes (docs/worktrees.md) and the repositories they
// are in. Its maps are guarded by mu; each repository and scope guards its
// own state.
type worktrees struct {
	mu     Locker
	repos  map[string]*wtRepo  // by the directory a scope named
	scopes map[string]*wtScope // by scope name
	// starts maps a repository's top-level directory to the commit the run
	// started at (the snapshot's Repos).
	starts map[string]string
	// earlier is what earlier attempts recorded of each scope, and landed
	// the last land fact of each visit (resume).
	earlier map[string]*record.Worktree
	landed  map[string]*Fact
	// owned are the memory scopes by the path of the visit whose end ends
	// them.
	owned map[string][]*wtScope
	// named names each opened repository's directories by its content, for
	// the visit keys of the turns that name them (see visitKey): pairs of
	// directory and name, a slice so that the walk never ranges over a map.
	named [][2]string
}

func newWorktrees(rt Runtime, starts map[string]string) *worktrees {
	return &worktrees{mu: rt.NewLock(), repos: map[string]*wtRepo{}, scopes: map[string]*wtScope{}, starts: starts,
		earlier: map[string]*record.Worktree{}, landed: map[string]*Fact{}, owned: map[string][]*wtScope{}}
}

// wtRepo is one repository, opened on first use: its integration branch
// flow/<run-id> is made then, at the commit the run started from.
type wtRepo struct {
	dir  string
	mu   Mutex // guards the rest; held while the repository is opened
	done bool
	git  Repo // the host's (Workspace.OpenRepo)
	err  error
}

// wtScope is one isolated scope: an isolated visit, a map item, a parallel
// branch, a loop or a flow call, or a memory scope's agent. Its worktree is
// made when the first visit in it runs, not before: a scope a resume
// replays whole needs none.
type wtScope struct {
	name    string
	land    string // merge | rebase | none
	memory  bool   // a memory scope's: kept across its visits
	owner   string // a memory scope's path: the worktree goes when that visit ends
	repoDir string

	// use makes a memory scope's worktree serve one visit at a time, from
	// its first change to its checkpoint.
	use Mutex

	mu     Locker // guards the rest
	repo   *wtRepo
	branch string
	path   string
	open   bool // made (again) in this attempt
	made   bool // made in this attempt or an earlier one
	gone   bool // removed
	base   string
	head   string         // the last checkpoint, or what landed
	files  []string       // every file the scope changed
	failed bool           // its last visit failed: keep it for the user
	landed record.Landing // how its last landing went
}

// integration is the run's integration branch in every repository.
func (r *runner) integration() string { return r.workspace.IntegrationBranch(r.opts.RunID) }

// scope returns the scope named name, made on first use with what earlier
// attempts recorded of it.
func (r *runner) scope(name, land, repoDir string, memory bool, owner string) *wtScope {
	r.wt.mu.Lock()
	defer r.wt.mu.Unlock()
	if sc := r.wt.scopes[name]; sc != nil {
		if sc.land == "" { // made by replay, before its node said how it lands
			sc.land, sc.repoDir = land, repoDir
		}
		return sc
	}
	sc := &wtScope{mu: r.rt.NewLock(), use: r.rt.NewMutex(), name: name, land: land, memory: memory, owner: owner, repoDir: repoDir}
	if rec := r.wt.earlier[name]; rec != nil {
		sc.branch, sc.path, sc.base, sc.head, sc.gone = rec.Branch, rec.Path, rec.Base, rec.Commit, rec.Removed
		sc.made = rec.Path != ""
		sc.files = slices.Clone(rec.Files)
		sc.landed, sc.failed = rec.Land, rec.Land == record.LandConflict
		if sc.repoDir == "" {
			sc.repoDir = rec.Repo
		}
	}
	r.wt.scopes[name] = sc
	if memory {
		r.wt.owned[owner] = append(r.wt.owned[owner], sc)
	}
	return sc
}

// scopeFor returns the scope of an isolated node's visit at path: the
// visit's own, or for an agent with memory the memory scope's.
func (r *runner) scopeFor(fr *frame, n *flows.Node, vars map[string]any, name string) (*wtScope, *Failure) {
	dir, err := r.repoDir(n, vars)
	if err != nil {
		return nil, &Failure{Kind: schema.FailCondition, Message: err.Error()}
	}
	if an := n.AsAgent(); an != nil && an.Memory != "" {
		owner := fr.scopes[an.Memory]
		return r.scope(owner+"@"+an.Agent.Name, n.Land, dir, true, owner), nil
	}
	return r.scope(name, n.Land, dir, false, ""), nil
}

// repoDir is the directory whose repository an isolated node works in.
func (r *runner) repoDir(n *flows.Node, vars map[string]any) (string, error) {
	if n.Repo == nil {
		return r.opts.WorkDir, nil
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
		s = filepath.Join(r.opts.WorkDir, s)
	}
	return s, nil
}

// repo opens the repository of dir once per run: the commit to make
// worktrees from, and the integration branch there.
func (r *runner) repo(ctx context.Context, dir string) (*wtRepo, error) {
	r.wt.mu.Lock()
	rp := r.wt.repos[dir]
	if rp == nil {
		rp = &wtRepo{mu: r.rt.NewMutex(), dir: dir}
		r.wt.repos[dir] = rp
	}
	r.wt.mu.Unlock()
	if err := rp.mu.Lock(ctx); err != nil {
		return nil, err
	}
	defer rp.mu.Unlock()
	if rp.done {
		return rp, rp.err
	}
	err := rp.init(ctx, r)
	if err != nil && ctx.Err() != nil {
		return rp, err // not kept: a later visit may try again
	}
	rp.done, rp.err = true, err
	return rp, err
}

// init opens the repository at the commit the run started from there:
// the snapshot's, else the one an earlier attempt recorded, else (a
// repository the run made, or named by an expression) its head.
func (rp *wtRepo) init(ctx context.Context, r *runner) error {
	g, err := r.workspace.OpenRepo(ctx, r.opts.RunID, rp.dir, func(top string) string {
		base := r.wt.starts[top]
		r.wt.mu.Lock()
		defer r.wt.mu.Unlock()
		for _, scope := range ordered.Keys(r.wt.earlier) {
			if rec := r.wt.earlier[scope]; base == "" && rec.Repo == top && rec.Base != "" {
				base = rec.Base
			}
		}
		return base
	})
	if err != nil {
		return err
	}
	rp.git = g
	if tree := g.Tree(ctx); len(tree) >= 12 {
		// A repository the run made at a fresh path each time (a
		// temporary directory) is named in a key by what it holds.
		name := "<repo:" + tree[:12] + ">"
		r.wt.mu.Lock()
		r.wt.named = append(r.wt.named, [2]string{rp.dir, name}, [2]string{g.Top(), name})
		r.wt.mu.Unlock()
	}
	return nil
}

// open makes sure the scope's worktree is there and clean at the scope's
// last recorded commit, and returns its directory: made on first use,
// found by its recorded path on a resume (or made again if it is gone),
// its branch moved back to what the journal holds.
func (r *runner) open(ctx context.Context, sc *wtScope) (string, *Failure) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.open {
		return sc.path, nil
	}
	rp, err := r.repo(ctx, sc.repoDir)
	if err != nil {
		return "", gitFailure(ctx, sc.name, err)
	}
	sc.repo = rp
	if sc.base == "" {
		sc.base = rp.git.Base()
	}
	if sc.head == "" {
		sc.head = sc.base
	}
	if sc.path == "" {
		sc.path = r.workspace.Worktree(sc.name)
	}
	if err := r.workspace.ReadyWorktree(sc.path); err != nil {
		return "", &Failure{Kind: schema.FailUnavailable, Message: err.Error()}
	}
	if sc.branch == "" {
		sc.branch = r.workspace.ScopeBranch(r.opts.RunID, sc.name)
	}
	if err := rp.git.MakeWorktree(ctx, sc.path, sc.branch, sc.head); err != nil {
		return "", gitFailure(ctx, sc.name, err)
	}
	sc.open, sc.made, sc.gone = true, true, false
	rec := &record.Worktree{Scope: sc.name, Repo: rp.git.Top(), Path: sc.path, Branch: sc.branch, Base: sc.base, Commit: sc.head}
	if err := r.dir.Fact(record.WorktreeMade{Time: r.rt.Now(), Worktree: rec}.Fact()); err != nil {
		return "", &Failure{Kind: schema.FailUnavailable, Message: err.Error()}
	}
	return sc.path, nil
}

// checkpoint commits what a visit changed in the scope's worktree, so that
// a resume finds the scope as the journal left it. A stop does not cut it
// short (Repo).
func (r *runner) checkpoint(ctx context.Context, sc *wtScope, visit string) (*record.Worktree, error) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	since := sc.head
	head, files, err := sc.repo.git.Checkpoint(context.WithoutCancel(ctx), sc.path, since, visit)
	if err != nil {
		return nil, fmt.Errorf("committing what %s changed in %s: %w", visit, sc.path, err)
	}
	sc.head = head
	for _, f := range files {
		if !slices.Contains(sc.files, f) {
			sc.files = append(sc.files, f)
		}
	}
	slices.Sort(sc.files)
	// Base..Commit is what the visit changed: a recording carries it to
	// another run (docs/reuse-and-tests.md).
	return &record.Worktree{Scope: sc.name, Branch: sc.branch, Base: since, Commit: head, Files: files}, nil
}

// remove removes the scope's worktree, and its branch once it landed.
func (r *runner) remove(ctx context.Context, sc *wtScope, dropBranch bool) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.gone || !sc.made {
		return nil
	}
	ctx = context.WithoutCancel(ctx) // a stop does not cut it short (Repo)
	rp, err := r.repo(ctx, sc.repoDir)
	if err != nil {
		return err
	}
	if err := rp.git.RemoveWorktree(ctx, sc.path, sc.branch, dropBranch); err != nil {
		return fmt.Errorf("removing the worktree of %s: %w", sc.name, err)
	}
	sc.gone, sc.open = true, false
	return r.dir.Fact(record.WorktreeRemoved{Time: r.rt.Now(), Scope: sc.name}.Fact())
}

// value is how a scope appears as x.worktree.
func (sc *wtScope) value(landed bool) map[string]any {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return flows.WorktreeValue(sc.branch, sc.head, sc.files, landed)
}

// gitFailure is a git step that failed: `unavailable`, or how ctx ended.
func gitFailure(ctx context.Context, scope string, err error) *Failure {
	if ctx.Err() != nil {
		return cancelled(ctx, "")
	}
	msg := fmt.Sprintf("isolating %s: %v", scope, err)
	if errors.Is(err, ErrNoWorkspace) {
		msg = err.Error()
	}
	return &Failure{Kind: schema.FailUnavailable, Message: msg}
}
