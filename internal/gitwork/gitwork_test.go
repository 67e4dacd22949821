package gitwork

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// isolate keeps the user's git configuration out of the test.
func isolate(t *testing.T) {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
}

// newRepo makes a repository with one commit of file f holding "a\nb\nc\n",
// and returns its directory.
func newRepo(t *testing.T) string {
	t.Helper()
	isolate(t)
	dir := t.TempDir()
	sh(t, dir, "git", "init", "-q", "-b", "main")
	write(t, dir, "f", "a\nb\nc\n")
	sh(t, dir, "git", "add", "-A")
	sh(t, dir, "git", "-c", "user.name=u", "-c", "user.email=u@example.invalid", "commit", "-q", "-m", "start")
	return dir
}

func sh(t *testing.T, dir string, argv ...string) string {
	t.Helper()
	c := exec.Command(argv[0], argv[1:]...)
	c.Dir = dir
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

var who = Identity{Name: "flow test", Email: "run@flow.invalid"}

func TestOpenOutsideARepository(t *testing.T) {
	isolate(t)
	_, err := Open(context.Background(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "is not in a git working tree") {
		t.Fatalf("Open outside a repository: %v", err)
	}
	if IsRepo(t.TempDir()) {
		t.Fatal("IsRepo holds for a temporary directory")
	}
}

func TestWorktreeCheckpointMergeAndConflict(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r, err := Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	base, err := r.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !IsRepo(filepath.Join(dir, "sub")) {
		t.Fatal("IsRepo fails below a repository's top")
	}
	if err := r.EnsureBranch(ctx, "flow/r1", base); err != nil {
		t.Fatal(err)
	}
	wts := t.TempDir()
	edit := func(name, branch, line string) string {
		wt := filepath.Join(wts, name)
		if err := r.Worktree(ctx, wt, branch, base); err != nil {
			t.Fatal(err)
		}
		write(t, wt, "f", "a\n"+line+"\nc\n")
		head, files, err := r.Checkpoint(ctx, wt, base, who, "edit "+name)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(files, []string{"f"}) {
			t.Fatalf("files %q", files)
		}
		return head
	}
	one := edit("one", "flow/r1.one", "B")
	two := edit("two", "flow/r1.two", "second")

	l, err := r.Merge(ctx, "flow/r1", one, who, "land one")
	if err != nil || len(l.Conflicts) > 0 {
		t.Fatalf("merge one: %+v %v", l, err)
	}
	again, err := r.Merge(ctx, "flow/r1", one, who, "land one again")
	if err != nil || !again.Already || again.Onto != l.Onto {
		t.Fatalf("landing a commit twice: %+v %v", again, err)
	}
	c, err := r.Merge(ctx, "flow/r1", two, who, "land two")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Conflicts, []string{"f"}) || c.Onto != l.Onto {
		t.Fatalf("conflict: %+v", c)
	}
	if got := sh(t, dir, "git", "log", "--topo-order", "--format=%s", "flow/r1"); got != "land one\nedit one\nstart" {
		t.Fatalf("log:\n%s", got)
	}
	// The user's branch and working tree are untouched.
	if got := sh(t, dir, "git", "rev-parse", "HEAD"); got != base {
		t.Fatalf("HEAD moved to %s", got)
	}
	if got := sh(t, dir, "git", "status", "--porcelain"); got != "" {
		t.Fatalf("the user's working tree changed:\n%s", got)
	}
	for _, name := range []string{"one", "two"} {
		if err := r.RemoveWorktree(ctx, filepath.Join(wts, name)); err != nil {
			t.Fatal(err)
		}
	}
	if got := sh(t, dir, "git", "worktree", "list"); strings.Count(got, "\n") != 0 {
		t.Fatalf("worktrees left:\n%s", got)
	}
}

func TestRebaseLandsLinearly(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r, _ := Open(ctx, dir)
	base, _ := r.Head(ctx)
	if err := r.EnsureBranch(ctx, "flow/r2", base); err != nil {
		t.Fatal(err)
	}
	wts := t.TempDir()
	for _, name := range []string{"x", "y"} {
		wt := filepath.Join(wts, name)
		if err := r.Worktree(ctx, wt, "flow/r2."+name, base); err != nil {
			t.Fatal(err)
		}
		write(t, wt, name, name+"\n")
		if _, _, err := r.Checkpoint(ctx, wt, base, who, "add "+name); err != nil {
			t.Fatal(err)
		}
		l, err := r.Rebase(ctx, wt, "flow/r2", who)
		if err != nil || len(l.Conflicts) > 0 {
			t.Fatalf("rebase %s: %+v %v", name, l, err)
		}
		again, err := r.Rebase(ctx, wt, "flow/r2", who)
		if err != nil || !again.Already {
			t.Fatalf("rebasing twice: %+v %v", again, err)
		}
	}
	if got := sh(t, dir, "git", "log", "--topo-order", "--format=%s", "flow/r2"); got != "add y\nadd x\nstart" {
		t.Fatalf("log:\n%s", got)
	}
	if got := sh(t, dir, "git", "rev-list", "--merges", "flow/r2"); got != "" {
		t.Fatalf("not linear: merges %s", got)
	}
}

func TestWorktreeIsReusedClean(t *testing.T) {
	ctx := context.Background()
	dir := newRepo(t)
	r, _ := Open(ctx, dir)
	base, _ := r.Head(ctx)
	wt := filepath.Join(t.TempDir(), "w")
	if err := r.Worktree(ctx, wt, "flow/r3.w", base); err != nil {
		t.Fatal(err)
	}
	write(t, wt, "f", "changed\n")
	write(t, wt, "new", "untracked\n")
	// A dead run's index lock, and the worktree made again at its base.
	gitDir := sh(t, wt, "git", "rev-parse", "--absolute-git-dir")
	write(t, gitDir, "index.lock", "")
	if err := r.Worktree(ctx, wt, "flow/r3.w", base); err != nil {
		t.Fatal(err)
	}
	if got := sh(t, wt, "git", "status", "--porcelain"); got != "" {
		t.Fatalf("not clean:\n%s", got)
	}
	// A directory that is no worktree any more is made one again.
	if err := os.RemoveAll(wt); err != nil {
		t.Fatal(err)
	}
	if err := r.Worktree(ctx, wt, "flow/r3.w", base); err != nil {
		t.Fatal(err)
	}
	if got := sh(t, wt, "git", "rev-parse", "--abbrev-ref", "HEAD"); got != "flow/r3.w" {
		t.Fatalf("branch %s", got)
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string][2]int{"git version 2.39.5": {2, 39}, "git version 2.45.1.windows.1": {2, 45}, "git version 3.0": {3, 0}} {
		ma, mi, ok := parseVersion(in)
		if !ok || ma != want[0] || mi != want[1] {
			t.Errorf("%q: %d.%d %v", in, ma, mi, ok)
		}
	}
	if _, _, ok := parseVersion("nonsense"); ok {
		t.Error("nonsense parsed")
	}
}
