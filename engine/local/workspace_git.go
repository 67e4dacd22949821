package local

import (
	"context"
	"errors"
	"time"

	"github.com/flowrun/flow/engine/worktrees"
	"github.com/flowrun/flow/internal/gitwork"
	"github.com/flowrun/flow/internal/gitwork/refname"
)

// The local host's working copies: git worktrees, made and landed by git
// in this process (internal/gitwork): the Workspace the walker lands
// isolated scopes through (docs/decisions.md, "A pure walker").

// gitTimeout bounds one git step that must not be cut short by a stop (a
// checkpoint, a removal, a landing: the walker gives it a ctx without
// cancellation), so that the repository is never left half way and yet a
// git that hangs does not hold the run for ever.
const gitTimeout = 2 * time.Minute

// IntegrationBranch is flow/<run-id>, ScopeBranch flow/<run-id>.<scope>
// (docs/worktrees.md).
func (workspace) IntegrationBranch(runID string) string { return refname.IntegrationBranch(runID) }
func (workspace) ScopeBranch(runID, scope string) string {
	return refname.ScopeBranch(runID, scope)
}

// OpenRepo opens the repository of dir and makes the run's integration
// branch there.
func (workspace) OpenRepo(ctx context.Context, runID, dir string, base func(top string) string) (worktrees.Repo, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	g, err := gitwork.Open(ctx, dir)
	if err != nil {
		return nil, noGit(err)
	}
	at := base(g.Top)
	if at == "" {
		if at, err = g.Head(ctx); err != nil {
			return nil, noGit(err)
		}
	}
	if err := g.EnsureBranch(ctx, refname.IntegrationBranch(runID), at); err != nil {
		return nil, noGit(err)
	}
	return &localRepo{git: g, run: runID, base: at}, nil
}

// localRepo is a repository of the run, through git.
type localRepo struct {
	git  *gitwork.Repo
	run  string
	base string
}

func (r *localRepo) Top() string  { return r.git.Top }
func (r *localRepo) Base() string { return r.base }

func (r *localRepo) Tree(ctx context.Context) string {
	ctx, cancel := bounded(ctx)
	defer cancel()
	tree, err := r.git.Tree(ctx, r.base)
	if err != nil {
		return ""
	}
	return tree
}

func (r *localRepo) MakeWorktree(ctx context.Context, path, branch, at string) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	return noGit(r.git.Worktree(ctx, path, branch, at))
}

// Checkpoint commits as the run's visit (gitwork.RunIdentity), with the
// message that names them.
func (r *localRepo) Checkpoint(ctx context.Context, path, since, visit string) (string, []string, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	head, files, err := r.git.Checkpoint(ctx, path, since, gitwork.RunIdentity(r.run, visit), gitwork.CheckpointMessage(r.run, visit))
	return head, files, noGit(err)
}

func (r *localRepo) RemoveWorktree(ctx context.Context, path, branch string, dropBranch bool) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	err := r.git.RemoveWorktree(ctx, path)
	if err == nil && dropBranch {
		err = r.git.DeleteBranch(ctx, branch)
	}
	return noGit(err)
}

func (r *localRepo) BranchHead(ctx context.Context, branch string) (string, bool, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	head, ok, err := r.git.Commit(ctx, "refs/heads/"+branch)
	return head, ok, noGit(err)
}

func (r *localRepo) Merge(ctx context.Context, commit, visit, msg string) (worktrees.LandResult, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	return landResult(r.git.Merge(ctx, refname.IntegrationBranch(r.run), commit, gitwork.RunIdentity(r.run, visit), msg))
}

func (r *localRepo) Rebase(ctx context.Context, path, visit string) (worktrees.LandResult, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	return landResult(r.git.Rebase(ctx, path, refname.IntegrationBranch(r.run), gitwork.RunIdentity(r.run, visit)))
}

func landResult(l gitwork.Landing, err error) (worktrees.LandResult, error) {
	return worktrees.LandResult{Conflicts: l.Conflicts, Onto: l.Onto, Head: l.Head}, noGit(err)
}

// bounded gives a step that no stop can end (ctx has no Done) the bound
// of gitTimeout; a step a stop can end is bound by ctx alone.
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx.Done() != nil {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, gitTimeout)
}

// noGitError is an error of git that says it cannot be used at all
// (gitwork.ErrNoGit): it is worktrees.ErrNoWorkspace to the walker.
type noGitError struct{ error }

func (e noGitError) Is(target error) bool { return target == worktrees.ErrNoWorkspace }
func (e noGitError) Unwrap() error        { return e.error }

func noGit(err error) error {
	if err != nil && errors.Is(err, gitwork.ErrNoGit) {
		return noGitError{err}
	}
	return err
}
