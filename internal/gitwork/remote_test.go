package gitwork

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRemoteScopesLandOnceAcrossClones is two workers' clones of one bare
// remote: one makes a scope's commit and pushes its branch, the other
// lands it on the integration branch and pushes that; a landing tried
// again finds the first by its trailers.
func TestRemoteScopesLandOnceAcrossClones(t *testing.T) {
	ctx := context.Background()
	src := newRepo(t)
	base := sh(t, src, "git", "rev-parse", "HEAD")
	bare := filepath.Join(t.TempDir(), "remote.git")
	sh(t, src, "git", "clone", "-q", "--bare", src, bare)
	sh(t, src, "git", "remote", "add", "origin", bare)
	url := "file://" + bare

	if got, err := Origin(ctx, src); err != nil || got != bare {
		t.Fatalf("Origin = %q, %v; want %q", got, err, bare)
	}
	if got, err := Origin(ctx, newRepo(t)); err != nil || got != "" {
		t.Fatalf("Origin of a repository without one = %q, %v", got, err)
	}
	if err := Reachable(ctx, url); err != nil {
		t.Fatal(err)
	}
	if err := Reachable(ctx, "file://"+filepath.Join(t.TempDir(), "nothing.git")); err == nil || !strings.Contains(err.Error(), "cannot be reached") {
		t.Fatalf("Reachable of nothing: %v", err)
	}

	g, err := Open(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	if on, err := g.OnRemote(ctx, url, base); err != nil || !on {
		t.Fatalf("OnRemote of the pushed start = %v, %v", on, err)
	}
	write(t, src, "unpushed", "x\n")
	sh(t, src, "git", "add", "-A")
	sh(t, src, "git", "-c", "user.name=u", "-c", "user.email=u@example.invalid", "commit", "-q", "-m", "unpushed")
	if on, err := g.OnRemote(ctx, url, sh(t, src, "git", "rev-parse", "HEAD")); err != nil || on {
		t.Fatalf("OnRemote of an unpushed commit = %v, %v", on, err)
	}

	a, err := Clone(ctx, filepath.Join(t.TempDir(), "a"), url)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Clone(ctx, filepath.Join(t.TempDir(), "b"), url)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.FetchCommit(ctx, url, base); err != nil {
		t.Fatal(err)
	}
	wt := filepath.Join(t.TempDir(), "wt")
	if err := a.Worktree(ctx, wt, "flow/r.s", base); err != nil {
		t.Fatal(err)
	}
	write(t, wt, "g", "new\n")
	head, files, err := a.Checkpoint(ctx, wt, base, who, "flow: s")
	if err != nil || !slices.Equal(files, []string{"g"}) {
		t.Fatalf("Checkpoint = %v, %v", files, err)
	}
	if err := a.Push(ctx, url, head, "flow/r.s", true); err != nil {
		t.Fatal(err)
	}
	if err := a.Push(ctx, url, base, "flow/r", false); err != nil {
		t.Fatal(err)
	}

	// The other clone lands it.
	got, ok, err := b.FetchBranch(ctx, url, "flow/r.s")
	if err != nil || !ok || got != head {
		t.Fatalf("FetchBranch = %s, %v, %v; want %s", got, ok, err, head)
	}
	if _, ok, err := b.FetchBranch(ctx, url, "flow/none"); err != nil || ok {
		t.Fatalf("FetchBranch of no branch: %v, %v", ok, err)
	}
	tip, _, err := b.FetchBranch(ctx, url, "flow/r")
	if err != nil {
		t.Fatal(err)
	}
	if l, err := b.Landed(ctx, tip, "r", "s"); err != nil || l != "" {
		t.Fatalf("Landed before landing = %q, %v", l, err)
	}
	if err := b.EnsureBranch(ctx, "flow/r", tip); err != nil {
		t.Fatal(err)
	}
	l, err := b.Merge(ctx, "flow/r", head, who, "flow: land s\n\nFlow-Run: r\nFlow-Scope: s\n")
	if err != nil || len(l.Conflicts) > 0 {
		t.Fatalf("Merge = %+v, %v", l, err)
	}
	if err := b.Push(ctx, url, l.Onto, "flow/r", false); err != nil {
		t.Fatal(err)
	}
	tip, _, err = a.FetchBranch(ctx, url, "flow/r")
	if err != nil || tip != l.Onto {
		t.Fatalf("the remote's flow/r = %s, %v; want %s", tip, err, l.Onto)
	}
	if got, err := a.Landed(ctx, tip, "r", "s"); err != nil || got != l.Onto {
		t.Fatalf("Landed = %q, %v; want %s", got, err, l.Onto)
	}
	if got, _ := a.Landed(ctx, tip, "r", "s2"); got != "" {
		t.Fatalf("Landed of another scope = %q", got)
	}
	if files, err := a.Files(ctx, base, tip); err != nil || !slices.Equal(files, []string{"g"}) {
		t.Fatalf("Files = %v, %v", files, err)
	}
	// A push that would not move forward is refused.
	if err := b.Push(ctx, url, base, "flow/r", false); err == nil {
		t.Fatal("a push back to the base moved the integration branch")
	}
}

func TestIsURL(t *testing.T) {
	for s, want := range map[string]bool{"file:///srv/r.git": true, "https://x/y": true, "git@github.com:o/r.git": true,
		"/srv/r.git": false, "../r": false, "a/b@c:d": false, "C:dir": false} {
		if IsURL(s) != want {
			t.Errorf("IsURL(%q) = %v", s, !want)
		}
	}
}
