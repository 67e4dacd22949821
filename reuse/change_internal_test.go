package reuse

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/flowrun/flow/engine/record"
)

// TestRecordedChangeStaysInTheWorktree: a cassette is data a repository
// carries; a recorded change that would write outside the worktree (a
// climb with "..") is refused whole, and a recording that names its
// commits with anything but commit ids is not handed to git.
func TestRecordedChangeStaysInTheWorktree(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	top := t.TempDir()
	wt := filepath.Join(top, "wt")
	if out, err := exec.Command("git", "init", "-q", wt).CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	rec := &Recording{Name: "c", Dir: t.TempDir(), repos: map[string]string{"s": wt}}
	if err := os.MkdirAll(filepath.Join(rec.Dir, cassetteChanges), 0o755); err != nil {
		t.Fatal(err)
	}
	patch := "diff --git a/../escaped b/../escaped\nnew file mode 100644\n--- /dev/null\n+++ b/../escaped\n@@ -0,0 +1 @@\n+out\n"
	if err := os.WriteFile(filepath.Join(rec.Dir, cassetteChanges, "v.patch"), []byte(patch), 0o644); err != nil {
		t.Fatal(err)
	}
	ok := true
	h := hit{rec, &record.Fact{Visit: "v", OK: &ok, Worktree: &record.Worktree{Scope: "s", Files: []string{"../escaped"}}}}
	if err := h.replayChange(context.Background(), wt); err == nil {
		t.Error("a change outside the worktree applied")
	}
	if _, err := os.Stat(filepath.Join(top, "escaped")); err == nil {
		t.Error("a recorded change wrote outside the worktree")
	}
	bad := hit{&Recording{Name: "r", Dir: t.TempDir(), repos: map[string]string{"s": wt}, own: true},
		&record.Fact{Visit: "v", OK: &ok, Worktree: &record.Worktree{Scope: "s", Base: "--output=" + filepath.Join(top, "x"), Commit: "HEAD", Files: []string{"f"}}}}
	if _, err := bad.change(context.Background(), wt); err == nil {
		t.Error("a recording's revisions that are not commit ids went to git")
	}
	if _, err := os.Stat(filepath.Join(top, "x")); err == nil {
		t.Error("git wrote where a recording said")
	}
}
