package reuse_test

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/internal/gitwork/refname"
	"github.com/flowrun/flow/reuse"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/steps/exec"
	"github.com/flowrun/flow/steps/run"
)

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	c := osexec.Command("git", append([]string{"-c", "user.name=u", "-c", "user.email=u@example.invalid"}, args...)...)
	c.Dir = dir
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// runIso runs testdata/isolated/iso.yaml in the repository repo, reusing
// the run directories from, and returns its result and the visits whose
// agent ran live.
func runIso(t *testing.T, repo string, from ...string) (*engine.Result, []string) {
	t.Helper()
	side := filepath.Join(t.TempDir(), "side")
	t.Setenv("SIDE", side)
	plan, diags := flows.Load("testdata/isolated/iso.yaml", flows.Options{Disk: osdisk.OS, WorkDir: repo, UserAgentDirs: []string{}})
	if plan == nil || diags.HasErrors() {
		t.Fatalf("loading: %v", diags)
	}
	cfg := local.Config{WorkDir: repo, Drivers: map[string]engine.Driver{"exec": exec.New(exec.Options{})}, Commands: run.New()}
	opts := engine.Options{Input: map[string]any{"notes": []any{"alpha", "beta"}}}
	if len(from) > 0 {
		set, err := reuse.Open("", from...)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Leaves = &reuse.Leaves{From: set, Next: local.Leaves{Drivers: cfg.Drivers, Commands: cfg.Commands}}
	}
	res, err := local.Execute(context.Background(), plan, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK {
		t.Fatalf("the run failed: %v", res.Failure.Root())
	}
	b, _ := os.ReadFile(side)
	ran := strings.Fields(string(b))
	slices.Sort(ran)
	return res, ran
}

// TestReuseLandsIsolatedScopesAgain: flow run --reuse answers the visits
// of isolated scopes (a map's items, an isolated leaf) from the earlier
// run with no agent run, makes what each recorded visit changed again in
// the new run's worktrees, and lands it on the new run's branch, each
// change once. A recorded change that no longer applies to the
// repository (the file it adds is there now) is not reused: that visit
// runs live, and the others are still reused.
func TestReuseLandsIsolatedScopesAgain(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	repo := t.TempDir()
	gitIn(t, repo, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "README"), []byte("notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-q", "-m", "start")

	first, ran := runIso(t, repo)
	if len(ran) != 3 {
		t.Fatalf("the first run ran %v, want 3 visits", ran)
	}
	second, ran := runIso(t, repo, first.Dir)
	if len(ran) != 0 {
		t.Errorf("the reusing run ran %v live, want none", ran)
	}
	facts, err := rundir.ReadJournal(second.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if sv := rundir.Saved(facts); sv.Visits != 3 {
		t.Errorf("%d visits reused, want 3", sv.Visits)
	}
	landed := 0
	for _, f := range facts {
		if f.Type == record.FactLand && f.Worktree != nil && f.Worktree.Land == record.Landed {
			landed++
		}
	}
	if landed != 3 {
		t.Errorf("%d scopes landed, want 3", landed)
	}
	branch := refname.IntegrationBranch(second.RunID)
	for _, note := range []string{"alpha", "beta", "fix"} {
		file := "notes/" + note + ".md"
		if got := gitIn(t, repo, "show", branch+":"+file); got != "the note "+note {
			t.Errorf("%s on %s holds %q", file, branch, got)
		}
		commits := gitIn(t, repo, "log", "--no-merges", "--format=%H", "main.."+branch, "--", file)
		if n := len(strings.Fields(commits)); n != 1 {
			t.Errorf("%s changed in %d commits on %s, want 1", file, n, branch)
		}
	}
	if files := gitIn(t, repo, "diff", "--name-only", "main", branch); files != "notes/alpha.md\nnotes/beta.md\nnotes/fix.md" {
		t.Errorf("%s changed %q", branch, files)
	}

	// alpha's recorded change adds a file the repository now holds.
	if err := os.MkdirAll(filepath.Join(repo, "notes"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "notes", "alpha.md"), []byte("someone else's alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-q", "-m", "alpha by hand")
	third, ran := runIso(t, repo, first.Dir)
	if !slices.Equal(ran, []string{"write[1]/note"}) {
		t.Errorf("with alpha's change stale, the run ran %v live, want only write[1]/note", ran)
	}
	branch = refname.IntegrationBranch(third.RunID)
	if got := gitIn(t, repo, "show", branch+":notes/alpha.md"); got != "the note alpha" {
		t.Errorf("alpha on %s: %q", branch, got)
	}
	if got := gitIn(t, repo, "show", branch+":notes/beta.md"); got != "the note beta" {
		t.Errorf("beta on %s: %q", branch, got)
	}
}
