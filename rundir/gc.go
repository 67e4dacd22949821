package rundir

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/gitwork"
)

// KeptWorktree is a worktree a run kept (docs/worktrees.md): of a scope
// that failed or conflicted, or of a run that was stopped or died.
type KeptWorktree struct {
	Run string
	*record.Worktree
	// Err says why it could not be removed.
	Err error
	// Skipped says why it was left alone: the journal names a path that
	// is neither inside the run's worktrees directory nor a worktree git
	// lists for the run.
	Skipped string
}

// RemoveKeptWorktrees removes the worktrees that the runs under runsDir
// kept, with git (`git worktree remove`, then `git worktree prune`), and
// returns them; with dryRun it only lists them. The worktrees of a run
// that is running are left alone. Branches stay: a kept branch is the
// user's to look at, merge or delete, and a resume of the run makes its
// worktree again from it.
//
// A journal is data a repository may carry, so the path it names is
// removed only when it is inside the run's own worktrees directory
// (symbolic links followed), or when git lists it as a worktree of the
// repository on one of the run's branches (flow/<run-id>.<scope>), and
// then by git alone. Anything else is left alone, with Skipped saying why.
func RemoveKeptWorktrees(ctx context.Context, runsDir string, dryRun bool) ([]KeptWorktree, error) {
	runs, err := List(runsDir)
	if err != nil {
		return nil, err
	}
	var out []KeptWorktree
	var errs []error
	for _, run := range runs {
		if run.Status == record.StatusRunning {
			continue
		}
		for _, w := range run.Worktrees {
			k := KeptWorktree{Run: run.ID, Worktree: w}
			inside := WorktreeInside(filepath.Join(runsDir, run.ID), w.Path)
			if !inside {
				k.Skipped = listedHere(ctx, run.ID, w)
			}
			if !dryRun && k.Skipped == "" {
				k.Err = removeWorktree(ctx, w, inside)
				if k.Err != nil {
					errs = append(errs, k.Err)
				}
			}
			out = append(out, k)
		}
	}
	return out, errors.Join(errs...)
}

// listedHere says why the worktree w of run, outside the run directory,
// is not one flow may remove, or "" when git lists it on a branch of the
// run.
func listedHere(ctx context.Context, run string, w *record.Worktree) string {
	why := "it is outside the run's directory and git lists no worktree of the run there"
	g, err := gitwork.Open(ctx, w.Repo)
	if err != nil {
		return why
	}
	branch, ok, err := g.ListedWorktree(ctx, w.Path)
	if err != nil || !ok || !strings.HasPrefix(branch, gitwork.IntegrationBranch(run)+".") {
		return why
	}
	return ""
}

func removeWorktree(ctx context.Context, w *record.Worktree, inside bool) error {
	g, err := gitwork.Open(ctx, w.Repo)
	if err == nil {
		if inside {
			err = g.RemoveWorktree(ctx, w.Path)
		} else {
			err = g.RemoveListedWorktree(ctx, w.Path)
		}
	}
	if err != nil {
		return fmt.Errorf("removing the worktree %s: %w", w.Path, err)
	}
	return nil
}
