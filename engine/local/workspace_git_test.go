package local

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/flowrun/flow/engine/worktrees"
	"github.com/flowrun/flow/internal/gitwork"
)

// A git step no stop can end gets the local host's bound; one a stop can
// end keeps its ctx as it is.
func TestLocalGitStepsAreBoundOnlyWhenNoStopCanEndThem(t *testing.T) {
	stoppable, stop := context.WithCancel(context.Background())
	defer stop()
	ctx, cancel := bounded(stoppable)
	defer cancel()
	if _, ok := ctx.Deadline(); ok || ctx != stoppable {
		t.Error("a stoppable step got a deadline of its own")
	}
	ctx2, cancel2 := bounded(context.WithoutCancel(stoppable))
	defer cancel2()
	if _, ok := ctx2.Deadline(); !ok {
		t.Error("a step no stop can end has no bound")
	}
}

// git that cannot be used at all is worktrees.ErrNoWorkspace to the walker, in its
// own words; any other git error is not.
func TestNoGitIsNoWorkspace(t *testing.T) {
	err := noGit(fmt.Errorf("%w: git is not installed", gitwork.ErrNoGit))
	if !errors.Is(err, worktrees.ErrNoWorkspace) || !errors.Is(err, gitwork.ErrNoGit) || err.Error() != "git is not available: git is not installed" {
		t.Errorf("noGit = %v", err)
	}
	if other := noGit(errors.New("merge failed")); errors.Is(other, worktrees.ErrNoWorkspace) {
		t.Errorf("%v is worktrees.ErrNoWorkspace", other)
	}
	if noGit(nil) != nil {
		t.Error("noGit(nil) is not nil")
	}
}
