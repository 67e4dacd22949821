package worktrees

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/ordered"
	"github.com/flowrun/flow/schema"
)

// Scopes are a run's isolated scopes (docs/worktrees.md) and the
// repositories they are in. Its maps are guarded by mu; each repository
// and scope guards its own state.
type Scopes struct {
	h      Host
	mu     Locker
	repos  map[string]*repo  // by the directory a scope named
	scopes map[string]*Scope // by scope name
	// starts maps a repository's top-level directory to the commit the run
	// started at (the snapshot's Repos).
	starts map[string]string
	// earlier is what earlier attempts recorded of each scope, and landed
	// the last land fact of each visit (resume).
	earlier map[string]*record.Worktree
	landed  map[string]*record.Fact
	// owned are the memory scopes by the path of the visit whose end ends
	// them.
	owned map[string][]*Scope
	// named names each opened repository's directories by its content, for
	// the visit keys of the turns that name them (see visitKey): pairs of
	// directory and name, a slice so that the walk never ranges over a map.
	named [][2]string
}

// New is a run's scopes, none made yet, on h.
func New(h Host) *Scopes {
	return &Scopes{h: h, mu: h.NewLock(), repos: map[string]*repo{}, scopes: map[string]*Scope{}, starts: h.Starts,
		earlier: map[string]*record.Worktree{}, landed: map[string]*record.Fact{}, owned: map[string][]*Scope{}}
}

// repo is one repository, opened on first use: its integration branch
// flow/<run-id> is made then, at the commit the run started from.
type repo struct {
	dir  string
	mu   Mutex // guards the rest; held while the repository is opened
	done bool
	git  Repo // the host's (Workspace.OpenRepo)
	err  error
}

// Scope is one isolated scope: an isolated visit, a map item, a parallel
// branch, a loop or a flow call, or a memory scope's agent. Its worktree is
// made when the first visit in it runs, not before: a scope a resume
// replays whole needs none.
type Scope struct {
	name    string
	land    string // merge | rebase | none
	memory  bool   // a memory scope's: kept across its visits
	owner   string // a memory scope's path: the worktree goes when that visit ends
	repoDir string

	// use makes a memory scope's worktree serve one visit at a time, from
	// its first change to its checkpoint.
	use Mutex

	mu     Locker // guards the rest
	repo   *repo
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

// Integration is the run's integration branch in every repository.
func (s *Scopes) Integration() string { return s.h.Workspace.IntegrationBranch(s.h.RunID) }

// Get returns the scope named name, made on first use with what earlier
// attempts recorded of it.
func (s *Scopes) Get(name, land, repoDir string, memory bool, owner string) *Scope {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc := s.scopes[name]; sc != nil {
		if sc.land == "" { // made by replay, before its node said how it lands
			sc.land, sc.repoDir = land, repoDir
		}
		return sc
	}
	sc := &Scope{mu: s.h.NewLock(), use: s.h.NewMutex(), name: name, land: land, memory: memory, owner: owner, repoDir: repoDir}
	if rec := s.earlier[name]; rec != nil {
		sc.branch, sc.path, sc.base, sc.head, sc.gone = rec.Branch, rec.Path, rec.Base, rec.Commit, rec.Removed
		sc.made = rec.Path != ""
		sc.files = slices.Clone(rec.Files)
		sc.landed, sc.failed = rec.Land, rec.Land == record.LandConflict
		if sc.repoDir == "" {
			sc.repoDir = rec.Repo
		}
	}
	s.scopes[name] = sc
	if memory {
		s.owned[owner] = append(s.owned[owner], sc)
	}
	return sc
}

// repo opens the repository of dir once per run: the commit to make
// worktrees from, and the integration branch there.
func (s *Scopes) repo(ctx context.Context, dir string) (*repo, error) {
	s.mu.Lock()
	rp := s.repos[dir]
	if rp == nil {
		rp = &repo{mu: s.h.NewMutex(), dir: dir}
		s.repos[dir] = rp
	}
	s.mu.Unlock()
	if err := rp.mu.Lock(ctx); err != nil {
		return nil, err
	}
	defer rp.mu.Unlock()
	if rp.done {
		return rp, rp.err
	}
	err := rp.init(ctx, s)
	if err != nil && ctx.Err() != nil {
		return rp, err // not kept: a later visit may try again
	}
	rp.done, rp.err = true, err
	return rp, err
}

// init opens the repository at the commit the run started from there:
// the snapshot's, else the one an earlier attempt recorded, else (a
// repository the run made, or named by an expression) its head.
func (rp *repo) init(ctx context.Context, s *Scopes) error {
	g, err := s.h.Workspace.OpenRepo(ctx, s.h.RunID, rp.dir, func(top string) string {
		base := s.starts[top]
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, scope := range ordered.Keys(s.earlier) {
			if rec := s.earlier[scope]; base == "" && rec.Repo == top && rec.Base != "" {
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
		s.mu.Lock()
		s.named = append(s.named, [2]string{rp.dir, name}, [2]string{g.Top(), name})
		s.mu.Unlock()
	}
	return nil
}

// Open makes sure the scope's worktree is there and clean at the scope's
// last recorded commit, and returns its directory: made on first use,
// found by its recorded path on a resume (or made again if it is gone),
// its branch moved back to what the journal holds.
func (s *Scopes) Open(ctx context.Context, sc *Scope) (string, *record.Failure) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.open {
		return sc.path, nil
	}
	rp, err := s.repo(ctx, sc.repoDir)
	if err != nil {
		return "", s.gitFailure(ctx, sc.name, err)
	}
	sc.repo = rp
	if sc.base == "" {
		sc.base = rp.git.Base()
	}
	if sc.head == "" {
		sc.head = sc.base
	}
	if sc.path == "" {
		sc.path = s.h.Workspace.Worktree(sc.name)
	}
	if err := s.h.Workspace.ReadyWorktree(sc.path); err != nil {
		return "", &record.Failure{Kind: schema.FailUnavailable, Message: err.Error()}
	}
	if sc.branch == "" {
		sc.branch = s.h.Workspace.ScopeBranch(s.h.RunID, sc.name)
	}
	if err := rp.git.MakeWorktree(ctx, sc.path, sc.branch, sc.head); err != nil {
		return "", s.gitFailure(ctx, sc.name, err)
	}
	sc.open, sc.made, sc.gone = true, true, false
	rec := &record.Worktree{Scope: sc.name, Repo: rp.git.Top(), Path: sc.path, Branch: sc.branch, Base: sc.base, Commit: sc.head}
	if err := s.h.Fact(record.WorktreeMade{Time: s.h.Now(), Worktree: rec}.Fact()); err != nil {
		return "", &record.Failure{Kind: schema.FailUnavailable, Message: err.Error()}
	}
	return sc.path, nil
}

// Checkpoint commits what a visit changed in the scope's worktree, so that
// a resume finds the scope as the journal left it. A stop does not cut it
// short (Repo).
func (s *Scopes) Checkpoint(ctx context.Context, sc *Scope, visit string) (*record.Worktree, error) {
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
func (s *Scopes) remove(ctx context.Context, sc *Scope, dropBranch bool) error {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.gone || !sc.made {
		return nil
	}
	ctx = context.WithoutCancel(ctx) // a stop does not cut it short (Repo)
	rp, err := s.repo(ctx, sc.repoDir)
	if err != nil {
		return err
	}
	if err := rp.git.RemoveWorktree(ctx, sc.path, sc.branch, dropBranch); err != nil {
		return fmt.Errorf("removing the worktree of %s: %w", sc.name, err)
	}
	sc.gone, sc.open = true, false
	return s.h.Fact(record.WorktreeRemoved{Time: s.h.Now(), Scope: sc.name}.Fact())
}

// Value is how a scope appears as x.worktree.
func (sc *Scope) Value(landed bool) map[string]any {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return flows.WorktreeValue(sc.branch, sc.head, sc.files, landed)
}

// gitFailure is a git step that failed: `unavailable`, or how ctx ended.
func (s *Scopes) gitFailure(ctx context.Context, scope string, err error) *record.Failure {
	if ctx.Err() != nil {
		return s.h.Cancelled(ctx, "")
	}
	msg := fmt.Sprintf("isolating %s: %v", scope, err)
	if errors.Is(err, ErrNoWorkspace) {
		msg = err.Error()
	}
	return &record.Failure{Kind: schema.FailUnavailable, Message: msg}
}

// Memory says the scope is a memory scope's: kept across its visits.
func (sc *Scope) Memory() bool { return sc.memory }

// Use makes a memory scope's worktree serve one visit at a time, from its
// first change to its checkpoint.
func (sc *Scope) Use() Mutex { return sc.use }

// Branch is the scope's branch, once its worktree is open.
func (sc *Scope) Branch() string {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.branch
}

// Failed says the scope's last visit failed, so that its worktree is kept
// for the user, and returns the scope's x.worktree.
func (sc *Scope) Failed() map[string]any {
	sc.mu.Lock()
	sc.failed = true
	sc.mu.Unlock()
	return sc.Value(false)
}
