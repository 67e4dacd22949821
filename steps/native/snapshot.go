package native

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// A resumed turn continues a conversation whose calls changed files; the
// working copy of an isolated visit is made again, clean, by a resume.
// So each call's fact records the working directory's content as a git
// tree (written into the repository's objects, the working copy and its
// index untouched), and a resumed turn in a worktree of its own brings
// the working copy back to the last one. The user's own checkout is never
// written: there, the files are as the calls left them.

// git runs git in dir with extra environment, and returns its trimmed
// standard output.
func git(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(errb.String()))
	}
	return strings.TrimSpace(out.String()), nil
}

// topOf is dir when it is the top of a git working copy, else "".
func topOf(ctx context.Context, dir string) string {
	top, err := git(ctx, dir, nil, "rev-parse", "--show-toplevel")
	if err != nil {
		return ""
	}
	a, _ := filepath.EvalSymlinks(top)
	b, _ := filepath.EvalSymlinks(dir)
	if a == "" || a != b {
		return ""
	}
	return dir
}

// snapshot writes dir's content (what git add -A would stage) as a tree
// through a copy of its index, and returns the tree's id; "" when dir is
// not a working copy's top or git fails.
func snapshot(ctx context.Context, dir string) string {
	if topOf(ctx, dir) == "" {
		return ""
	}
	index, err := git(ctx, dir, nil, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return ""
	}
	tmp, err := os.CreateTemp("", "flow-index-")
	if err != nil {
		return ""
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	if b, err := os.ReadFile(index); err == nil {
		_ = os.WriteFile(tmp.Name(), b, 0o600) // its stat cache spares hashing every file
	}
	env := []string{"GIT_INDEX_FILE=" + tmp.Name()}
	if _, err := git(ctx, dir, env, "add", "-A", "."); err != nil {
		return ""
	}
	tree, err := git(ctx, dir, env, "write-tree")
	if err != nil {
		return ""
	}
	return tree
}

// linked says dir is a linked worktree (one flow made for an isolated
// scope), not a repository's main checkout.
func linked(ctx context.Context, dir string) bool {
	gd, err1 := git(ctx, dir, nil, "rev-parse", "--path-format=absolute", "--git-dir")
	cd, err2 := git(ctx, dir, nil, "rev-parse", "--path-format=absolute", "--git-common-dir")
	return err1 == nil && err2 == nil && gd != cd
}

// restore brings the linked worktree dir back to tree: the files tree
// holds are written, those it does not are removed. The worktree's own
// index and branch are left as they are (the visit's checkpoint commits
// what the files are).
func restore(ctx context.Context, dir, tree string) error {
	if tree == "" || topOf(ctx, dir) == "" || !linked(ctx, dir) {
		return nil
	}
	now := snapshot(ctx, dir)
	if now == "" || now == tree {
		return nil
	}
	added, err := git(ctx, dir, nil, "diff", "--name-only", "-z", "--no-renames", "--diff-filter=A", tree, now)
	if err != nil {
		return err
	}
	for _, f := range strings.Split(added, "\x00") {
		if f != "" {
			_ = os.Remove(filepath.Join(dir, f))
		}
	}
	tmp, err := os.CreateTemp("", "flow-index-")
	if err != nil {
		return err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	env := []string{"GIT_INDEX_FILE=" + tmp.Name()}
	if _, err := git(ctx, dir, env, "read-tree", tree); err != nil {
		return err
	}
	_, err = git(ctx, dir, env, "checkout-index", "-a", "-f")
	return err
}
