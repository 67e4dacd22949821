package gitwork

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Repo is a repository flow makes worktrees of. Its commands that write are
// serialised by a mutex shared by every Repo of the same repository in this
// process.
type Repo struct {
	// Top is the top-level directory of the working tree dir was in.
	Top    string
	common string // the common git directory: refs and worktree records
	mu     *sync.Mutex
}

var repoLocks sync.Map // common git directory → *sync.Mutex

// Open finds the repository whose working tree holds dir. The error wraps
// ErrNoGit when git cannot be used, and says so plainly when dir is in no
// repository.
func Open(ctx context.Context, dir string) (*Repo, error) {
	if err := checkGit(ctx); err != nil {
		return nil, err
	}
	out, err := run(ctx, dir, nil, "rev-parse", "--show-toplevel", "--git-common-dir")
	if err != nil {
		if exitCode(err) > 0 {
			return nil, fmt.Errorf("%s is not in a git working tree (isolation: worktree needs one): %w", dir, err)
		}
		return nil, err
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		return nil, fmt.Errorf("reading the repository of %s: unexpected output %q", dir, out)
	}
	common := lines[1]
	if !filepath.IsAbs(common) {
		common = filepath.Join(dir, common)
	}
	if abs, err := filepath.Abs(common); err == nil {
		common = abs
	}
	if real, err := filepath.EvalSymlinks(common); err == nil {
		common = real
	}
	mu, _ := repoLocks.LoadOrStore(common, &sync.Mutex{})
	return &Repo{Top: lines[0], common: common, mu: mu.(*sync.Mutex)}, nil
}

// Head returns the commit checked out in the repository's main worktree.
func (r *Repo) Head(ctx context.Context) (string, error) {
	c, ok, err := r.Commit(ctx, "HEAD")
	if err == nil && !ok {
		return "", fmt.Errorf("the repository %s has no commit yet: make one before isolating work in it", r.Top)
	}
	return c, err
}

// Commit resolves rev to a commit id; ok is false when there is none.
func (r *Repo) Commit(ctx context.Context, rev string) (id string, ok bool, err error) {
	out, err := run(ctx, r.Top, nil, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	if exitCode(err) == 1 {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	return strings.TrimSpace(out), true, nil
}

// IsAncestor reports whether commit a is b or an ancestor of b.
func (r *Repo) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := run(ctx, r.Top, nil, "merge-base", "--is-ancestor", a, b)
	switch exitCode(err) {
	case -1:
		return err == nil, err
	case 1:
		return false, nil
	}
	return false, err
}

// EnsureBranch creates branch name at commit unless it exists.
func (r *Repo) EnsureBranch(ctx context.Context, name, at string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok, err := r.Commit(ctx, "refs/heads/"+name); err != nil || ok {
		return err
	}
	_, err := run(ctx, r.Top, nil, "update-ref", "-m", "flow: integration branch", "refs/heads/"+name, at, "")
	return err
}

// DeleteBranch deletes branch name; a branch that is not there is no error.
func (r *Repo) DeleteBranch(ctx context.Context, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	old, ok, err := r.Commit(ctx, "refs/heads/"+name)
	if err != nil || !ok {
		return err
	}
	_, err = run(ctx, r.Top, nil, "update-ref", "-d", "refs/heads/"+name, old)
	return err
}

// Worktree makes path a clean worktree with branch checked out at commit
// at: the branch is created or moved there, and whatever the worktree held
// beyond it (changes, untracked files, a rebase a dead run left half done)
// is dropped. A worktree already at path is reused; anything else there is
// removed first. Lock files a dead process left in the worktree's own git
// directory are cleared: only the caller uses the worktree.
func (r *Repo) Worktree(ctx context.Context, path, branch, at string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if gitDir, ok := r.worktreeGitDir(ctx, path); ok {
		_ = os.Remove(filepath.Join(gitDir, "index.lock"))
		if isDir(filepath.Join(gitDir, "rebase-merge")) || isDir(filepath.Join(gitDir, "rebase-apply")) {
			_, _ = run(ctx, path, nil, "rebase", "--abort")
		}
		if _, err := run(ctx, path, nil, "checkout", "-q", "-f", "-B", branch, at); err != nil {
			return err
		}
		_, err := run(ctx, path, nil, "clean", "-q", "-f", "-d")
		return err
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("clearing %s for a worktree: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("creating the worktree's directory: %w", err)
	}
	if _, err := run(ctx, r.Top, nil, "worktree", "prune"); err != nil {
		return err
	}
	_, err := run(ctx, r.Top, nil, "worktree", "add", "-q", "-f", "-B", branch, path, at)
	return err
}

// worktreeGitDir returns the git directory of the worktree at path, if
// path is the top of a worktree of this repository.
func (r *Repo) worktreeGitDir(ctx context.Context, path string) (string, bool) {
	if _, err := os.Stat(filepath.Join(path, ".git")); err != nil {
		return "", false
	}
	out, err := run(ctx, path, nil, "rev-parse", "--show-toplevel", "--git-dir", "--git-common-dir")
	if err != nil {
		return "", false
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !samePath(lines[0], path) {
		return "", false
	}
	gitDir, common := lines[1], lines[2]
	if !filepath.IsAbs(gitDir) {
		gitDir = filepath.Join(path, gitDir)
	}
	if !filepath.IsAbs(common) {
		common = filepath.Join(path, common)
	}
	if !samePath(common, r.common) {
		return "", false
	}
	return gitDir, true
}

// RemoveWorktree removes the worktree at path and its record; a path that
// is not there is no error. Its branch stays.
func (r *Repo) RemoveWorktree(ctx context.Context, path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := run(ctx, r.Top, nil, "worktree", "remove", "--force", "--force", path)
	if err == nil {
		return nil
	}
	// Not a worktree (any more): remove what is there, and the record.
	if rerr := os.RemoveAll(path); rerr != nil {
		return errors.Join(err, rerr)
	}
	_, err = run(ctx, r.Top, nil, "worktree", "prune")
	return err
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func samePath(a, b string) bool {
	ra, err1 := filepath.EvalSymlinks(a)
	rb, err2 := filepath.EvalSymlinks(b)
	if err1 != nil || err2 != nil {
		return filepath.Clean(a) == filepath.Clean(b)
	}
	return ra == rb
}

// ListedWorktree reports whether `git worktree list --porcelain` lists
// path as a worktree of the repository, and the branch it has checked out
// (without refs/heads/). A path from a record flow did not write (a
// journal a repository carries) is trusted as a worktree only this way.
func (r *Repo) ListedWorktree(ctx context.Context, path string) (branch string, ok bool, err error) {
	out, err := run(ctx, r.Top, nil, "worktree", "list", "--porcelain")
	if err != nil {
		return "", false, err
	}
	for _, rec := range strings.Split(out, "\n\n") {
		var wt, br string
		for _, line := range strings.Split(rec, "\n") {
			if p, found := strings.CutPrefix(line, "worktree "); found {
				wt = p
			}
			if b, found := strings.CutPrefix(line, "branch "); found {
				br = strings.TrimPrefix(b, "refs/heads/")
			}
		}
		if wt != "" && samePath(wt, path) {
			return br, true, nil
		}
	}
	return "", false, nil
}

// RemoveListedWorktree removes the worktree at path with git only: unlike
// RemoveWorktree, nothing is removed when git does not take it for one of
// the repository's worktrees.
func (r *Repo) RemoveListedWorktree(ctx context.Context, path string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, err := run(ctx, r.Top, nil, "worktree", "remove", "--force", "--force", path)
	return err
}
