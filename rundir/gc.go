package rundir

import (
	"context"
	"errors"
	"fmt"

	"github.com/flowrun/flow/internal/gitwork"
)

// KeptWorktree is a worktree a run kept (docs/worktrees.md): of a scope that failed
// or conflicted, or of a run that was stopped or died.
type KeptWorktree struct {
	Run string
	*Worktree
	// Err says why it could not be removed.
	Err error
}

// RemoveKeptWorktrees removes the worktrees that the runs under runsDir
// kept, with git (`git worktree remove`, then `git worktree prune`), and
// returns them; with dryRun it only lists them. The worktrees of a run
// that is running are left alone. Branches stay: a kept branch is the
// user's to look at, merge or delete, and a resume of the run makes its
// worktree again from it.
func RemoveKeptWorktrees(ctx context.Context, runsDir string, dryRun bool) ([]KeptWorktree, error) {
	runs, err := List(runsDir)
	if err != nil {
		return nil, err
	}
	var out []KeptWorktree
	var errs []error
	for _, run := range runs {
		if run.Status == StatusRunning {
			continue
		}
		for _, w := range run.Worktrees {
			k := KeptWorktree{Run: run.ID, Worktree: w}
			if !dryRun {
				k.Err = removeWorktree(ctx, w)
				if k.Err != nil {
					errs = append(errs, k.Err)
				}
			}
			out = append(out, k)
		}
	}
	return out, errors.Join(errs...)
}

func removeWorktree(ctx context.Context, w *Worktree) error {
	g, err := gitwork.Open(ctx, w.Repo)
	if err == nil {
		err = g.RemoveWorktree(ctx, w.Path)
	}
	if err != nil {
		return fmt.Errorf("removing the worktree %s: %w", w.Path, err)
	}
	return nil
}
