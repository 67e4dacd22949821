package temporal

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/internal/gitwork/refname"
	"github.com/flowrun/flow/steps/run"
)

// gitIn runs git in dir with the test's own configuration.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	c := exec.Command("git", append([]string{"-c", "user.name=u", "-c", "user.email=u@example.invalid"}, args...)...)
	c.Dir = dir
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// remoteRepo makes a repository with one commit whose origin is a bare
// repository; it returns the repository's directory and the remote's URL.
func remoteRepoForTest(t *testing.T) (dir, url string) {
	t.Helper()
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	dir = t.TempDir()
	gitIn(t, dir, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("# notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "start")
	bare := filepath.Join(t.TempDir(), "remote.git")
	gitIn(t, dir, "clone", "-q", "--bare", dir, bare)
	url = "file://" + bare
	gitIn(t, dir, "remote", "add", "origin", url)
	return dir, url
}

// Two workers, each with a clone of its own, work three scopes of a run
// through the remote: a worker dies mid-visit and the other does the
// visit again from the scope's head; the scopes land in item order on
// flow/<run-id> there, and a landing run again after its worker died
// lands nothing twice.
func TestWorkspaceScopesLandOnceInOrderAcrossWorkers(t *testing.T) {
	ctx := context.Background()
	src, url := remoteRepoForTest(t)
	workers := []*Activities{
		{RunsDir: filepath.Join(t.TempDir(), "runs"), Queue: "flow@a"},
		{RunsDir: filepath.Join(t.TempDir(), "runs"), Queue: "flow@b"},
	}
	a, b := workers[0], workers[1]
	const run = "r1"

	res, err := a.Repo(ctx, &RepoInput{RunID: run, WorkDir: src, Dir: src})
	if err != nil {
		t.Fatal(err)
	}
	if res.URL != url || res.Top != src || res.Head == "" {
		t.Fatalf("Repo = %+v", res)
	}
	base := res.Head
	if _, err := b.Repo(ctx, &RepoInput{RunID: run, Open: true, URL: url, Base: base}); err != nil {
		t.Fatal(err)
	}

	scopes := []string{"write[0]", "write[1]", "write[2]"}
	heads := map[string]string{}
	for i, sc := range scopes {
		w, other := workers[i%2], workers[(i+1)%2]
		branch := refname.ScopeBranch(run, sc)
		if err := w.Scope(ctx, &ScopeInput{URL: url, Branch: branch, At: base}); err != nil {
			t.Fatal(err)
		}
		visit := sc + "/note"
		ref := &ScopeRef{URL: url, Branch: branch}
		if i == 1 { // the worker dies mid-visit: what it changed never leaves it
			dir, _, err := w.enterScope(ctx, ref, run, visit)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "half-done"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			w = other
		}
		dir, leave, err := w.enterScope(ctx, ref, run, visit)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "half-done")); err == nil {
			t.Fatal("the visit run again sees what the dead worker left")
		}
		if err := os.WriteFile(filepath.Join(dir, "note-"+sc[6:7]+".md"), []byte(sc+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := leave(ctx); err != nil {
			t.Fatal(err)
		}
		cp, err := other.Checkpoint(ctx, &CheckpointInput{URL: url, Branch: branch, Since: base, Visit: visit})
		if err != nil {
			t.Fatal(err)
		}
		if cp.Head == base || !slices.Equal(cp.Files, []string{"note-" + sc[6:7] + ".md"}) {
			t.Fatalf("Checkpoint of %s = %+v", sc, cp)
		}
		heads[sc] = cp.Head
	}

	land := func(w *Activities, sc string) *LandOutput {
		t.Helper()
		msg := "flow: land " + sc + "\n\nFlow-Run: " + run + "\nFlow-Scope: " + sc + "\n"
		out, err := w.Land(ctx, &LandInput{URL: url, RunID: run, Scope: trailer(msg, "Flow-Scope"), Integration: refname.IntegrationBranch(run),
			Commit: heads[sc], Visit: sc, Msg: msg})
		if err != nil || len(out.Conflicts) > 0 {
			t.Fatalf("Land %s: %+v, %v", sc, out, err)
		}
		return out
	}
	first := land(b, scopes[0])
	land(a, scopes[1])
	land(b, scopes[2])
	again := land(a, scopes[0]) // retried after its worker died having pushed
	if !again.Already || again.Onto != first.Onto {
		t.Fatalf("the retried landing = %+v, want the first (%s)", again, first.Onto)
	}

	bare := strings.TrimPrefix(url, "file://")
	got := gitIn(t, bare, "log", "--first-parent", "--reverse", "--format=%s", "main..flow/"+run)
	if want := "flow: land write[0]\nflow: land write[1]\nflow: land write[2]"; got != want {
		t.Fatalf("flow/%s on the remote:\n%s\nwant\n%s", run, got, want)
	}
	if files := gitIn(t, bare, "ls-tree", "--name-only", "flow/"+run); files != "README.md\nnote-0.md\nnote-1.md\nnote-2.md" {
		t.Fatalf("flow/%s holds\n%s", run, files)
	}

	for _, sc := range scopes {
		if err := a.Drop(ctx, &DropInput{URL: url, Branch: refname.ScopeBranch(run, sc), Drop: true}); err != nil {
			t.Fatal(err)
		}
	}
	if left := gitIn(t, bare, "branch", "--list", "flow/*"); left != "flow/"+run {
		t.Fatalf("the remote's flow branches after the scopes went:\n%s", left)
	}
}

// The workflow side of the workspace in Temporal's test environment, its
// activities real (git, a command): a scope opened on the remote, a `run`
// leaf in it writing a file in the worktree its worker makes, the
// checkpoint taking what it left, and a landing done twice landing once.
func TestWorkspaceStepsInAWorkflow(t *testing.T) {
	src, url := remoteRepoForTest(t)
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.SetTestTimeout(60 * time.Second)
	acts := &Activities{Leaves: local.Leaves{Commands: run.New()}, RunsDir: filepath.Join(t.TempDir(), "runs"), Queue: "w1", Host: "h1"}
	env.RegisterActivityWithOptions(acts.Command, activity.RegisterOptions{Name: CommandActivity})
	for name, fn := range map[string]any{RepoActivity: acts.Repo, ScopeActivity: acts.Scope, CheckpointActivity: acts.Checkpoint,
		LandActivity: acts.Land, DropActivity: acts.Drop, BranchActivity: acts.Branch} {
		env.RegisterActivityWithOptions(fn, activity.RegisterOptions{Name: name})
	}
	const runID = "r1"
	type result struct {
		Base, Head, Onto, Again string
		Files                   []string
		Dir                     string
	}
	env.ExecuteWorkflow(func(w workflow.Context) (*result, error) {
		ctx := withWorkflow(context.Background(), w)
		ws := newWorkspace(runID, src, "flow", Timing{}.withDefaults())
		repo, err := ws.OpenRepo(ctx, runID, src, func(top string) string { return "" })
		if err != nil {
			return nil, err
		}
		res := &result{Base: repo.Base()}
		path, branch := ws.Worktree("write[1]"), ws.ScopeBranch(runID, "write[1]")
		if err := ws.ReadyWorktree(path); err != nil {
			return nil, err
		}
		if err := repo.MakeWorktree(ctx, path, branch, repo.Base()); err != nil {
			return nil, err
		}
		leafs := leaves{queue: "flow", timing: Timing{}.withDefaults(), ws: ws}
		cr, err := leafs.Command(ctx, &engine.Command{RunID: runID, Visit: "write[1]/note", Script: "echo one > note.md; pwd", Dir: path, Timeout: time.Minute})
		if err != nil {
			return nil, err
		}
		res.Dir = strings.TrimSpace(cr.Report)
		if res.Head, res.Files, err = repo.Checkpoint(context.WithoutCancel(ctx), path, repo.Base(), "write[1]/note"); err != nil {
			return nil, err
		}
		msg := "flow: land write[1]\n\nFlow-Run: " + runID + "\nFlow-Scope: write[1]\n"
		for i := range 2 {
			l, err := repo.Merge(context.WithoutCancel(ctx), res.Head, "write[1]", msg)
			if err != nil || len(l.Conflicts) > 0 {
				return nil, fmt.Errorf("landing: %v %v", l.Conflicts, err)
			}
			if i == 0 {
				res.Onto = l.Onto
			} else {
				res.Again = l.Onto
			}
		}
		return res, repo.RemoveWorktree(context.WithoutCancel(ctx), path, branch, true)
	})
	if err := env.GetWorkflowError(); err != nil {
		t.Fatal(err)
	}
	var res result
	if err := env.GetWorkflowResult(&res); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Dir, acts.RunsDir) {
		t.Errorf("the leaf ran in %s, not in a worktree of its worker's (%s)", res.Dir, acts.RunsDir)
	}
	if res.Head == res.Base || !slices.Equal(res.Files, []string{"note.md"}) {
		t.Errorf("the checkpoint took %s %v from %s", res.Head, res.Files, res.Base)
	}
	if res.Onto == "" || res.Again != res.Onto {
		t.Errorf("landed %s, then again %s: want the same landing", res.Onto, res.Again)
	}
	bare := strings.TrimPrefix(url, "file://")
	if got := gitIn(t, bare, "log", "--first-parent", "--format=%s", "main..flow/"+runID); got != "flow: land write[1]" {
		t.Errorf("flow/%s on the remote: %q", runID, got)
	}
	if left := gitIn(t, bare, "branch", "--list", "flow/*"); left != "flow/"+runID {
		t.Errorf("branches left on the remote: %q", left)
	}
}
