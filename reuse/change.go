package reuse

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/flowrun/flow/internal/gitwork"
	"github.com/flowrun/flow/rundir"
)

// change is what the recorded visit h changed in its worktree, as a
// patch ("" when it changed nothing): a cassette's changes/VISIT.patch,
// else read from the recorded run's repository, Base..Commit of its end.
// A recording is data a repository may carry: the repository it names is
// read only when the recording is one of this machine's runs (own), or
// when it is the repository of here, the worktree the change is made
// again in (docs/reuse-and-tests.md).
func (h hit) change(ctx context.Context, here string) (string, error) {
	w := h.fact.Worktree
	if w == nil || len(w.Files) == 0 {
		return "", nil
	}
	p := filepath.Join(h.rec.Dir, cassetteChanges, fileName(h.fact.Visit)+".patch")
	if within(h.rec.Dir, p) {
		b, err := rundir.ReadRegular(p)
		return string(b), err
	}
	repo := h.rec.repos[w.Scope]
	if repo == "" || !isCommit(w.Base) || !isCommit(w.Commit) {
		return "", fmt.Errorf("the recording %s does not say what %s changed in its worktree", h.rec.Name, h.fact.Visit)
	}
	if !h.rec.own && (here == "" || !gitwork.SameRepo(ctx, repo, here)) {
		return "", fmt.Errorf("the recording %s names the repository %s for what %s changed, outside this run's repository: a cassette's changes are its own %s/*.patch files", h.rec.Name, repo, h.fact.Visit, cassetteChanges)
	}
	patch, err := gitwork.Change(ctx, repo, w.Base, w.Commit)
	if err != nil {
		return "", fmt.Errorf("reading what %s changed in %s: %w", h.fact.Visit, repo, err)
	}
	return patch, nil
}

// replayChange makes what the recorded visit h changed again in the
// worktree holding dir: the walker then commits it and lands it as it
// would the live visit's (docs/reuse-and-tests.md).
func (h hit) replayChange(ctx context.Context, dir string) error {
	patch, err := h.change(ctx, dir)
	if err != nil {
		return err
	}
	return gitwork.Apply(ctx, dir, patch)
}

// isCommit reports whether s is a commit id: a recording is data, and
// what it names is handed to git only when it can be nothing else.
func isCommit(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
