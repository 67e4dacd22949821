package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flow/internal/devserver"
	"github.com/flowrun/flow/rundir"
)

// temporalEnv is the environment of flow processes in these tests: short
// heartbeats, so that a dead worker's visit moves on within seconds.
func temporalEnv(runsDir string) []string {
	return append(os.Environ(), "FLOW_RUNS_DIR="+runsDir, "FLOW_TEMPORAL_HEARTBEAT=2s", "FLOW_TEMPORAL_SESSION_WAIT=3s")
}

// startWorker starts `flow worker` in dir; it is stopped when the test ends.
func startWorker(t *testing.T, bin, dir, addr, queue string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "worker", "--temporal", addr, "--task-queue", queue, "--runs-dir", t.TempDir())
	cmd.Dir = dir
	cmd.Env = temporalEnv(t.TempDir())
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("worker %d:\n%s", cmd.Process.Pid, out.String())
		}
	})
	return cmd
}

// outcome is what a run left: its output and how each visit ended.
type outcome struct {
	Output any
	Visits map[string]string
	Status rundir.Status
}

func runOutcome(t *testing.T, runsDir string) (string, outcome) {
	t.Helper()
	runs, err := rundir.List(runsDir)
	if err != nil || len(runs) != 1 {
		t.Fatalf("want one run in %s, have %d (%v)", runsDir, len(runs), err)
	}
	info := runs[0]
	b, err := os.ReadFile(filepath.Join(info.Dir, "output.json"))
	if err != nil {
		t.Fatal(err)
	}
	var o outcome
	if err := json.Unmarshal(b, &o.Output); err != nil {
		t.Fatal(err)
	}
	o.Visits, o.Status = map[string]string{}, info.Status
	for _, v := range rundir.Visits(info.Facts) {
		switch {
		case v.End == nil:
			o.Visits[v.Start.Visit] = "unended"
		case v.End.Succeeded():
			o.Visits[v.Start.Visit] = "ok"
		default:
			o.Visits[v.Start.Visit] = string(v.End.Error.Kind)
		}
	}
	return info.Dir, o
}

func TestTemporalFanoutGivesTheLocalOutcome(t *testing.T) {
	srv := devserver.Start(t)
	bin := flowBinary(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	flowRun := func(runsDir string, args ...string) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"run"}, args...)...)
		cmd.Dir, cmd.Env = root, temporalEnv(runsDir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("flow run %s: %v\n%s\n%s", strings.Join(args, " "), err, out, srv.Log())
		}
	}
	local, remote := t.TempDir(), t.TempDir()
	flowRun(local, "examples/fanout.yaml")
	startWorker(t, bin, root, srv.Address, "fanout")
	flowRun(remote, "--temporal", srv.Address, "--task-queue", "fanout", "examples/fanout.yaml")

	_, want := runOutcome(t, local)
	dir, got := runOutcome(t, remote)
	if want.Status != rundir.StatusSucceeded || !reflect.DeepEqual(got, want) {
		t.Errorf("flow run --temporal left\n%+v\nflow run left\n%+v", got, want)
	}
	snap, err := rundir.ReadSnapshot(dir)
	if err != nil || snap.Temporal == nil || snap.Temporal.Workflow != filepath.Base(dir) {
		t.Errorf("the mirrored run's snapshot does not name its workflow: %+v (%v)", snap, err)
	}
	facts, _ := rundir.ReadJournal(dir)
	for _, f := range facts {
		if f.Type == rundir.FactEnd && (f.Kind == "agent" || f.Kind == "run") && !strings.HasPrefix(f.Worker, "fanout@") {
			t.Errorf("%s ran on worker %q: not on a flow worker", f.Visit, f.Worker)
		}
	}
	// The mirror is a run directory like any other.
	for _, f := range []string{"report.html", "usage.json", "snapshot.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the mirrored run has no %s: %v", f, err)
		}
	}
	cmd := exec.Command(bin, "show", filepath.Base(dir))
	cmd.Dir, cmd.Env = root, temporalEnv(remote)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "succeeded") {
		t.Errorf("flow show of the mirrored run: %v\n%s", err, out)
	}
}

// sideEffects reads the lines visits appended to path: "start VISIT PID"
// and "end VISIT".
func sideEffects(t *testing.T, path string) (starts map[string][]string, ends map[string]int) {
	t.Helper()
	b, _ := os.ReadFile(path)
	starts, ends = map[string][]string{}, map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		switch {
		case len(f) == 3 && f[0] == "start":
			starts[f[1]] = append(starts[f[1]], f[2])
		case len(f) == 2 && f[0] == "end":
			ends[f[1]]++
		}
	}
	return starts, ends
}

func TestTemporalAKilledWorkersVisitRunsOnTheOther(t *testing.T) {
	srv := devserver.Start(t)
	bin := flowBinary(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "ran")
	step := func(id, pause string) string {
		return fmt.Sprintf("  - {id: %s, run: 'echo \"start $FLOW_VISIT $PPID\" >> ran; %secho \"end $FLOW_VISIT\" >> ran'}\n", id, pause)
	}
	flow := "name: kill\nnodes:\n" + step("first", "") +
		"  - id: each\n    map: '[1, 2, 3, 4]'\n    max: 4\n    concurrency: 4\n    do:\n  " +
		strings.ReplaceAll(step("work", "sleep 3; "), "\n  - ", "\n    - ") + step("last", "")
	flow = strings.Replace(flow, "do:\n    - {id: work", "do:\n      - {id: work", 1)
	if err := os.WriteFile(filepath.Join(dir, "kill.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	w1 := startWorker(t, bin, dir, srv.Address, "kill")
	w2 := startWorker(t, bin, dir, srv.Address, "kill")
	runsDir := t.TempDir()
	run := exec.Command(bin, "run", "--temporal", srv.Address, "--task-queue", "kill", "kill.yaml")
	run.Dir, run.Env = dir, temporalEnv(runsDir)
	var out bytes.Buffer
	run.Stdout, run.Stderr = &out, &out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill the worker of the first map item to start, mid-visit.
	var victim string
	deadline := time.Now().Add(30 * time.Second)
	for victim == "" {
		starts, _ := sideEffects(t, log)
		if pids := starts["each[1]/work"]; len(pids) > 0 {
			victim = pids[0]
		}
		if time.Now().After(deadline) {
			_ = run.Process.Kill()
			t.Fatalf("the map never started:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	killed, survivor := w1, w2
	if fmt.Sprint(w2.Process.Pid) == victim {
		killed, survivor = w2, w1
	}
	if err := killed.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := run.Wait(); err != nil {
		t.Fatalf("the run did not complete after a worker died: %v\n%s", err, out.String())
	}
	starts, ends := sideEffects(t, log)
	t.Logf("visits started on workers %v", starts)
	for _, v := range []string{"first", "each[1]/work", "each[2]/work", "each[3]/work", "each[4]/work", "last"} {
		if ends[v] != 1 {
			t.Errorf("visit %s ended %d times, want once (starts on workers %v)", v, ends[v], starts[v])
		}
	}
	if n := len(starts["first"]); n != 1 {
		t.Errorf("the visit that ended before the kill ran %d times", n)
	}
	if got := starts["each[1]/work"]; len(got) != 2 || got[1] != fmt.Sprint(survivor.Process.Pid) {
		t.Errorf("the killed worker's visit started on workers %v, want %s then the survivor %d", got, victim, survivor.Process.Pid)
	}
	_, o := runOutcome(t, runsDir)
	if o.Status != rundir.StatusSucceeded {
		t.Errorf("the mirrored run is %s, want succeeded", o.Status)
	}
}
