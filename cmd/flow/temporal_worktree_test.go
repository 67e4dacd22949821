package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/internal/devserver"
)

// An isolated flow whose repository has no remote the workers can reach
// is refused by flow validate --temporal and by flow run --temporal
// before anything of the run is made: no run directory, no workflow.
func TestTemporalRefusesIsolationWithoutAReachableRemote(t *testing.T) {
	env := gitEnv(t)
	dir := repoWith(t, env, map[string]string{
		"agents/writer.md": writerAgent, "agents/writer.sh": writerScript, "two.yaml": twoWriters,
		".gitignore": ".flow/\n",
	})
	runsDir := filepath.Join(dir, ".flow", "runs")
	env = append(env, "FLOW_RUNS_DIR="+runsDir, "MARKS="+t.TempDir())

	out, err := flowIn(t, env, dir, "validate", "--temporal", "127.0.0.1:1", "two.yaml")
	if code := exitCode(err); code != 2 || !strings.Contains(out, `two.yaml:4:5: isolation: worktree on Temporal needs a remote the workers can reach: the repository of `+dir+` has no remote "origin"`) {
		t.Fatalf("flow validate --temporal without a remote: exit %d\n%s", code, out)
	}
	if out, err := flowIn(t, env, dir, "validate", "two.yaml"); err != nil {
		t.Fatalf("flow validate without --temporal: %v\n%s", err, out)
	}
	// An origin that is not there is no better.
	gone := filepath.Join(t.TempDir(), "gone.git")
	gitCmd(t, env, dir, "remote", "add", "origin", gone)
	out, err = flowIn(t, env, dir, "validate", "--temporal", "127.0.0.1:1", "two.yaml")
	if code := exitCode(err); code != 2 || !strings.Contains(out, "the remote "+gone+" cannot be reached") {
		t.Fatalf("flow validate --temporal with an unreachable remote: exit %d\n%s", code, out)
	}

	// A remote they reach: the flow is still refused up front, and says
	// why, until the run workflow gives scopes working copies on workers
	// (temporal.Workspaces).
	bare := filepath.Join(t.TempDir(), "remote.git")
	gitCmd(t, env, dir, "clone", "-q", "--bare", dir, bare)
	gitCmd(t, env, dir, "remote", "set-url", "origin", "file://"+bare)
	out, err = flowIn(t, env, dir, "validate", "--temporal", "127.0.0.1:1", "two.yaml")
	if code := exitCode(err); code != 2 || !strings.Contains(out, "two.yaml:4:5: isolation: worktree needs the run's working copy on this machine") {
		t.Fatalf("flow validate --temporal with a reachable remote: exit %d\n%s", code, out)
	}

	srv := devserver.Start(t)
	gitCmd(t, env, dir, "remote", "remove", "origin")
	out, err = flowIn(t, env, dir, "run", "--temporal", srv.Address, "--task-queue", "refused", "two.yaml")
	if code := exitCode(err); code != 2 || !strings.Contains(out, `has no remote "origin"`) {
		t.Fatalf("flow run --temporal without a remote: exit %d\n%s", code, out)
	}
	if entries, err := os.ReadDir(runsDir); err == nil && len(entries) > 0 {
		t.Errorf("the refused run left %d entries in %s", len(entries), runsDir)
	}
}

// exitCode is the exit status of a flow process that failed, 0 when it
// did not, -1 when it did not exit.
func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	return -1
}
