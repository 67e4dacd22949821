package engine

import (
	"context"
	"errors"

	"github.com/flowrun/flow/internal/secret"
)

// Host is where every effect of a walk happens: the walker decides what
// a run does and means, its Host decides where that happens. The clock,
// sleeps, groups of branches and items, mutexes and semaphores (Runtime),
// agent turns and commands (LeafRunner), facts, events and values
// (Recorder), the redactor, and the working copies of isolated scopes
// (Workspace). The local host is this process and its run directory
// (package engine/local); a Temporal workflow is another (package
// temporal). What differs between hosts is only where an effect happens,
// never what it means (docs/decisions.md, "A pure walker").
type Host interface {
	Runtime
	LeafRunner
	Recorder
	// Redactor is what the host redacts in what the walker hands back to
	// its caller (the result, its failure); nil where leaves redact where
	// they run.
	Redactor() *secret.Redactor
	// Workspace is where isolated scopes get their working copies, or nil
	// on a host that has none: a plan with isolation is then refused
	// before the walk.
	Workspace() Workspace
	// Blind says the host's turns cannot be watched live (Parts.Blind).
	Blind() bool
	// Delegator serves the delegate calls of the host's turns, or is nil
	// on a host that cannot: a plan that delegates is then refused before
	// the walk.
	Delegator() Delegator
	// Waiter keeps the run's waits, or is nil on a host that cannot: a
	// plan that waits is then refused before the walk (docs/waits.md).
	Waiter() Waiter
}

// Workspace holds the working copies of a run's isolated scopes.
type Workspace interface {
	// Worktree is the directory of scope's working copy.
	Worktree(scope string) string
	// KeepOutOfGit keeps the run's own files out of the repositories its
	// working copies are made from.
	KeepOutOfGit() error
	// ReadyWorktree makes the workspace ready to hold the working copy at
	// path, refusing a path that is not the workspace's own (a journal is
	// data: it may name any directory).
	ReadyWorktree(path string) error
	// Confine drops the path of every recorded worktree of ws that is not
	// the workspace's own, so that a resume neither reuses nor clears it,
	// and says so in one note each.
	Confine(ws []*Worktree) (notes []string)
	// Tree is the identity of dir's content (a visit key's part for a run
	// node that says reuse: true), or "" when it has none.
	Tree(ctx context.Context, dir string) string
	// IntegrationBranch is the branch of run runID that its scopes land
	// on, in every repository; ScopeBranch is the branch of its scope.
	IntegrationBranch(runID string) string
	ScopeBranch(runID, scope string) string
	// OpenRepo opens the repository dir is in, for run runID, and makes
	// the run's integration branch there at base(top), top being the
	// repository's top-level directory, or at its head when base gives
	// "". The walker opens each directory once per run.
	OpenRepo(ctx context.Context, runID, dir string, base func(top string) string) (Repo, error)
}

// Repo is a repository a run isolates scopes in (Workspace.OpenRepo):
// it opens, checkpoints and lands a scope's working copy, one step at a
// time as the walker says (which scope lands when is the walker's:
// docs/worktrees.md). A step whose ctx no stop can end (WithoutCancel: a
// checkpoint, a removal, a landing) runs to its end, within a bound of
// the host's, so that the repository is never left half way.
type Repo interface {
	Top() string  // the repository's top-level directory
	Base() string // the commit the run's scopes start from there
	// Tree is the identity of Base's content ("" when it cannot be read):
	// a repository the run made at a fresh path is named by it in keys.
	Tree(ctx context.Context) string
	// MakeWorktree makes the working copy at path on branch, at commit
	// at, or finds it there, clean, with branch moved back to at.
	MakeWorktree(ctx context.Context, path, branch, at string) error
	// Checkpoint commits what visit changed in the working copy at path
	// since commit since: the new head and the files changed.
	Checkpoint(ctx context.Context, path, since, visit string) (head string, files []string, err error)
	// RemoveWorktree removes the working copy at path, and branch with it
	// when dropBranch says so.
	RemoveWorktree(ctx context.Context, path, branch string, dropBranch bool) error
	// BranchHead is the commit branch is at (ok false: no such branch).
	BranchHead(ctx context.Context, branch string) (head string, ok bool, err error)
	// Merge lands commit on the integration branch as a merge whose
	// message is msg; Rebase lands the working copy at path by rebasing
	// it onto the integration branch. Conflicts, when there are any, are
	// the files that conflict, and nothing moved.
	Merge(ctx context.Context, commit, visit, msg string) (LandResult, error)
	Rebase(ctx context.Context, path, visit string) (LandResult, error)
}

// LandResult is how a Merge or a Rebase went: the files that conflict
// (then nothing moved), or the integration branch's commit after it.
type LandResult struct {
	Conflicts []string
	Onto      string
	Head      string // a rebase's: the scope's new head
}

// ErrNoWorkspace is wrapped by a Workspace's error that says working
// copies cannot be made at all (no git, or too old a one): the walker
// says it as it is, without the scope it was opening.
var ErrNoWorkspace = errors.New("no working copies can be made")

// Parts are what NewHost makes a Host of.
type Parts struct {
	Runtime Runtime
	Leaves  LeafRunner
	Recorder
	Redactor  *secret.Redactor // nil: leaves redact where they run
	Workspace Workspace        // nil: no working copies on this host
	// Blind says the leaves run where the walker cannot watch a turn live
	// (a Temporal worker): Turn.Watch never reaches the turn, so each turn
	// is bound by what it reserved, which Turn.TokensLeft carries.
	Blind bool
	// Delegator serves turns' delegate calls (docs/delegation.md); nil:
	// no turn on this host may delegate.
	Delegator Delegator
	// Waiter keeps the run's waits (docs/waits.md); nil: no node may wait.
	Waiter Waiter
}

// hostOf is a Host made of its parts.
type hostOf struct {
	Runtime
	LeafRunner
	Recorder
	p Parts
}

// NewHost makes a Host of its parts.
func NewHost(p Parts) Host {
	return hostOf{Runtime: p.Runtime, LeafRunner: p.Leaves, Recorder: p.Recorder, p: p}
}

func (h hostOf) Redactor() *secret.Redactor { return h.p.Redactor }

func (h hostOf) Blind() bool { return h.p.Blind }

// Delegator is nil, not a nil value in an interface, when h has none.
func (h hostOf) Delegator() Delegator {
	if h.p.Delegator == nil {
		return nil
	}
	return h.p.Delegator
}

// Workspace is nil, not a nil value in an interface, when h has none.
func (h hostOf) Workspace() Workspace {
	if h.p.Workspace == nil {
		return nil
	}
	return h.p.Workspace
}

// Waiter is nil, not a nil value in an interface, when h has none.
func (h hostOf) Waiter() Waiter {
	if h.p.Waiter == nil {
		return nil
	}
	return h.p.Waiter
}
