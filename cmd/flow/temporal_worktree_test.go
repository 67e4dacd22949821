package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/devserver"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/temporal"
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

	// A remote they reach: the flow is valid for Temporal — refused up
	// front still, and saying why, while the run workflow gives scopes no
	// working copies on workers (temporal.Workspaces).
	bare := filepath.Join(t.TempDir(), "remote.git")
	gitCmd(t, env, dir, "clone", "-q", "--bare", dir, bare)
	gitCmd(t, env, dir, "remote", "set-url", "origin", "file://"+bare)
	// A start commit the remote does not hold cannot be fetched by workers.
	gitCmd(t, env, dir, "commit", "-q", "--allow-empty", "-m", "not pushed")
	out, err = flowIn(t, env, dir, "validate", "--temporal", "127.0.0.1:1", "two.yaml")
	if code := exitCode(err); code != 2 || !strings.Contains(out, "is not on its remote file://"+bare+": push it there first") {
		t.Fatalf("flow validate --temporal with the start commit not pushed: exit %d\n%s", code, out)
	}
	gitCmd(t, env, dir, "push", "-q", "origin", "HEAD:main")
	out, err = flowIn(t, env, dir, "validate", "--temporal", "127.0.0.1:1", "two.yaml")
	switch code := exitCode(err); {
	case temporal.Workspaces && code != 0:
		t.Fatalf("flow validate --temporal with a reachable remote: exit %d\n%s", code, out)
	case !temporal.Workspaces && (code != 2 || !strings.Contains(out, "two.yaml:4:5: isolation: worktree needs the run's working copy on this machine")):
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

// examples/writers.yaml on Temporal, its repository's remote a bare
// repository (file://), two workers each in a clone of their own of the
// project: the three scopes land in item order on flow/<run-id> in the
// remote; a worker killed (kill -9) mid-scope, the other does the scope
// again and the run completes, each scope landed once.
func TestTemporalWritersLandInOrderAcrossWorkers(t *testing.T) {
	if !temporal.Workspaces {
		t.Skip("the run workflow gives isolated scopes no working copies yet (temporal.Workspaces)")
	}
	srv := devserver.Start(t)
	bin := flowBinary(t)
	env := gitEnv(t)
	marks := t.TempDir()
	tmp := t.TempDir() // where the flow's scratch repository and its remote go
	// The project: the example and its agents, the note-writer marking
	// where it runs and, the first time, taking long over the second note.
	files := map[string]string{"examples/writers.yaml": readFile(t, "../../examples/writers.yaml")}
	for _, name := range []string{"note-writer.md", "landing-reviewer.md", "bin/landing-reviewer.sh"} {
		files["examples/agents/"+name] = readFile(t, "../../examples/agents/"+name)
	}
	writer := readFile(t, "../../examples/agents/bin/note-writer.sh")
	files["examples/agents/bin/note-writer.sh"] = strings.Replace(writer, "mkdir -p notes\n",
		`echo "$FLOW_VISIT $PPID" >> "$MARKS/started"
case "$FLOW_VISIT" in
*"[2]"*) if [ ! -e "$MARKS/slept" ]; then touch "$MARKS/slept"; sleep 60; fi ;;
esac
mkdir -p notes
`, 1)
	proj := repoWith(t, env, files)
	for name := range files {
		if strings.HasSuffix(name, ".sh") {
			if err := os.Chmod(filepath.Join(proj, name), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	gitCmd(t, env, proj, "add", "-A")
	gitCmd(t, env, proj, "commit", "-q", "--allow-empty", "-m", "modes")
	wenv := append(temporalEnv(t.TempDir()), append(env, "MARKS="+marks, "TMPDIR="+tmp)...)
	var workers []*exec.Cmd
	for i := range 2 {
		clone := filepath.Join(t.TempDir(), fmt.Sprint("w", i))
		gitCmd(t, env, proj, "clone", "-q", proj, clone)
		w := exec.Command(bin, "worker", "--temporal", srv.Address, "--task-queue", "writers", "--runs-dir", filepath.Join(clone, ".flow", "runs"))
		w.Dir, w.Env = clone, wenv
		var out bytes.Buffer
		w.Stdout, w.Stderr = &out, &out
		if err := w.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = w.Process.Signal(syscall.SIGTERM)
			_ = w.Wait()
			if t.Failed() {
				t.Logf("worker %d:\n%s", w.Process.Pid, out.String())
			}
		})
		workers = append(workers, w)
	}
	runsDir := t.TempDir()
	run := exec.Command(bin, "run", "--temporal", srv.Address, "--task-queue", "writers", "examples/writers.yaml")
	run.Dir, run.Env = proj, append(temporalEnv(runsDir), append(env, "MARKS="+marks, "TMPDIR="+tmp)...)
	var out bytes.Buffer
	run.Stdout, run.Stderr = &out, &out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill the worker writing the second note, mid-scope.
	var victim string
	for deadline := time.Now().Add(60 * time.Second); victim == ""; time.Sleep(20 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join(marks, "started"))
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "write[2]/note" {
				victim = f[1]
			}
		}
		if time.Now().After(deadline) {
			_ = run.Process.Kill()
			t.Fatalf("the second writer never started:\n%s\n%s", out.String(), b)
		}
	}
	var killed *exec.Cmd
	for _, w := range workers {
		if fmt.Sprint(w.Process.Pid) == victim {
			killed = w
		}
	}
	if killed == nil {
		t.Fatalf("no worker has pid %s", victim)
	}
	if err := killed.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := run.Wait(); err != nil {
		t.Fatalf("the run did not complete after a worker died: %v\n%s", err, out.String())
	}
	_, o := runOutcome(t, runsDir)
	if o.Status != record.StatusSucceeded {
		t.Fatalf("the run is %s: %v\n%s", o.Status, o.Visits, out.String())
	}
	starts, _ := os.ReadFile(filepath.Join(marks, "started"))
	if n := strings.Count(string(starts), "write[2]/note "); n != 2 {
		t.Errorf("the killed worker's scope started %d times, want twice:\n%s", n, starts)
	}
	// The scratch repository's remote holds the run's branch.
	remotes, _ := filepath.Glob(filepath.Join(tmp, "flow-writers.*.git"))
	if len(remotes) != 1 {
		t.Fatalf("want one scratch remote in %s, have %v", tmp, remotes)
	}
	runs, _ := rundir.List(runsDir)
	got := gitCmd(t, env, remotes[0], "log", "--first-parent", "--reverse", "--format=%s", "main..flow/"+runs[0].ID)
	if want := "flow: land write[1]\nflow: land write[2]\nflow: land write[3]"; got != want {
		t.Errorf("flow/<run-id> on the remote:\n%s\nwant\n%s", got, want)
	}
	if notes := gitCmd(t, env, remotes[0], "ls-tree", "-r", "--name-only", "flow/"+runs[0].ID, "notes"); notes != "notes/alpha.md\nnotes/beta.md\nnotes/gamma.md" {
		t.Errorf("flow/<run-id> holds\n%s", notes)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
