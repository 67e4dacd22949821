package worktrees

import (
	"context"
	"errors"

	"github.com/flowrun/flow/engine/record"
)

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
	Confine(ws []*record.Worktree) (notes []string)
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
