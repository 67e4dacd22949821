package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/devserver"
	"github.com/flowrun/flow/rundir"
)

// temporalEnv is the environment of flow processes in these tests: short
// heartbeats, so that a dead worker's visit moves on within seconds.
func temporalEnv(runsDir string) []string {
	return append(os.Environ(), "FLOW_RUNS_DIR="+runsDir, "FLOW_TEMPORAL_HEARTBEAT=2s", "FLOW_TEMPORAL_SESSION_WAIT=3s")
}

// startWorker starts `flow worker` in dir, with more flags if given; it
// is stopped when the test ends.
func startWorker(t *testing.T, bin, dir, addr, queue string, flags ...string) *exec.Cmd {
	t.Helper()
	return startWorkerEnv(t, bin, dir, addr, queue, nil, flags...)
}

// startWorkerEnv is startWorker with env added to its environment.
func startWorkerEnv(t *testing.T, bin, dir, addr, queue string, env []string, flags ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"worker", "--temporal", addr, "--task-queue", queue, "--runs-dir", t.TempDir()}, flags...)...)
	cmd.Dir = dir
	cmd.Env = append(temporalEnv(t.TempDir()), env...)
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
	Status record.Status
}

// valuesWithout drops what tells two runs of one flow apart in their node
// values: where a long answer was stored (_file), which names the run.
func valuesWithout(v map[string]any) map[string]any {
	b, _ := json.Marshal(v)
	s := regexp.MustCompile(`"_file":"[^"]*",?`).ReplaceAllString(string(b), "")
	var out map[string]any
	_ = json.Unmarshal([]byte(s), &out)
	return out
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
	// Two workers, each started in a directory of its own with --workdir
	// at its own checkout: the exec agents' relative commands, the agent
	// files and the run: nodes resolve there as the run recorded them.
	// One visit at a time each, so that the map's three items spread.
	for range 2 {
		startWorker(t, bin, t.TempDir(), srv.Address, "fanout", "--workdir", checkout(t, root), "--concurrency", "1")
	}
	flowRun(remote, "--temporal", srv.Address, "--task-queue", "fanout", "examples/fanout.yaml")

	_, want := runOutcome(t, local)
	dir, got := runOutcome(t, remote)
	if want.Status != record.StatusSucceeded || !reflect.DeepEqual(got, want) {
		t.Errorf("flow run --temporal left\n%+v\nflow run left\n%+v", got, want)
	}
	snap, err := rundir.ReadSnapshot(dir)
	if err != nil || snap.Temporal == nil || snap.Temporal.Workflow != filepath.Base(dir) {
		t.Errorf("the mirrored run's snapshot does not name its workflow: %+v (%v)", snap, err)
	}
	facts, _ := rundir.ReadJournal(dir)
	workers := map[string]bool{}
	for _, f := range facts {
		if f.Type == record.FactEnd && (f.Kind == "agent" || f.Kind == "run") {
			if !strings.HasPrefix(f.Worker, "fanout@") {
				t.Errorf("%s ran on worker %q: not on a flow worker", f.Visit, f.Worker)
			}
			workers[f.Worker] = true
		}
	}
	if len(workers) != 2 {
		t.Errorf("the visits ran on workers %v, want both", workers)
	}
	// The node values a sweep's score reads come back with the workflow's
	// result, as a local run writes them.
	localRuns, _ := rundir.List(local)
	wantValues, err := rundir.ReadValues(localRuns[0].Dir)
	if err != nil {
		t.Fatal(err)
	}
	if gotValues, err := rundir.ReadValues(dir); err != nil || !reflect.DeepEqual(valuesWithout(gotValues), valuesWithout(wantValues)) {
		t.Errorf("values.json of the Temporal run = %v (%v), want the local run's %v", gotValues, err, wantValues)
	}
	// The mirror is a run directory like any other.
	for _, f := range []string{"report.html", "usage.json", "snapshot.json", "values.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the mirrored run has no %s: %v", f, err)
		}
	}
	// A worker keeps transcripts; on this machine, flow tail reads them.
	tail := exec.Command(bin, "tail", filepath.Base(dir), "report")
	tail.Dir, tail.Env = root, temporalEnv(remote)
	if out, err := tail.CombinedOutput(); err != nil || len(out) == 0 {
		t.Errorf("flow tail of a visit a worker ran: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "show", filepath.Base(dir))
	cmd.Dir, cmd.Env = root, temporalEnv(remote)
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "succeeded") {
		t.Errorf("flow show of the mirrored run: %v\n%s", err, out)
	}
}

// checkout copies what examples/fanout.yaml needs of the repository at
// root into a directory of its own: another machine's checkout.
func checkout(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "examples"), os.DirFS(filepath.Join(root, "examples"))); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"README.md", "go.mod", "Taskfile.yml"} {
		b, err := os.ReadFile(filepath.Join(root, p))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, p), b, 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
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
	// The map's visits are agent turns (an exec agent that logs as the
	// run: steps do): a turn whose worker died runs again on another; a
	// command does not (temporal's TestE2EACommandWhoseWorkerDiedIsNotRunAgain).
	flow := "name: kill\n" +
		"agents:\n  - {name: w, description: works, driver: exec, command: [sh, -c, 'cat >/dev/null; " +
		"echo \"start $FLOW_VISIT $PPID\" >> ran; sleep 3; echo \"end $FLOW_VISIT\" >> ran; echo done']}\n" +
		"nodes:\n" + step("first", "") +
		"  - id: each\n    map: '[1, 2, 3, 4]'\n    max: 4\n    concurrency: 4\n    do:\n" +
		"      - {id: work, agent: w, prompt: go}\n" + step("last", "")
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
	runDir, o := runOutcome(t, runsDir)
	if o.Status != record.StatusSucceeded {
		t.Errorf("the mirrored run is %s, want succeeded", o.Status)
	}
	// The killed turn was sent and paid for: its visit's end records the
	// attempt on the killed worker (an exec agent reports no tokens: its
	// spend is unknown), and the retry as its second attempt; flow show
	// and the report say so.
	facts, _ := rundir.ReadJournal(runDir)
	var end *record.Fact
	for _, f := range facts {
		if f.Type == record.FactEnd && f.Visit == "each[1]/work" {
			end = f
		}
	}
	if end == nil || end.Attempts != 2 || len(end.Sent) != 1 || end.Sent[0].Attempt != 1 || end.Sent[0].Tokens != nil ||
		!strings.Contains(end.Sent[0].Worker, "-"+victim+"-") {
		t.Errorf("the killed visit's end: %+v, want attempt 1 sent on worker %s with its spend unknown, and 2 attempts", end, victim)
	}
	show, err := temporalFlow(t, bin, dir, runsDir, "show", filepath.Base(runDir))
	if err != nil || !strings.Contains(show, "attempt 1 sent on kill@") || !strings.Contains(show, "spend unknown") {
		t.Errorf("flow show does not tell the sent attempt: %v\n%s", err, show)
	}
	if report, _ := os.ReadFile(filepath.Join(runDir, "report.html")); !strings.Contains(string(report), "attempt 1 sent on kill@") {
		t.Error("report.html does not tell the sent attempt")
	}
	// The live view got the visits' progress from their heartbeats.
	events, _ := os.ReadFile(filepath.Join(runDir, "events.jsonl"))
	if !strings.Contains(string(events), `"type":"progress","run":"`) || !strings.Contains(string(events), `"visit":"each[2]/work"`) {
		t.Errorf("the mirror recorded no progress of the running visits:\n%s", events)
	}
}

// chainFlow writes a flow of three run steps that append to ran, the
// second slow, and returns its directory.
func chainFlow(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	flow := "name: chain\nnodes:\n"
	for _, s := range []struct{ id, pause string }{{"a", ""}, {"b", "sleep 2; "}, {"c", ""}} {
		flow += fmt.Sprintf("  - {id: %s, run: 'echo \"start $FLOW_VISIT $PPID\" >> ran; %secho \"end $FLOW_VISIT\" >> ran'}\n", s.id, s.pause)
	}
	if err := os.WriteFile(filepath.Join(dir, "chain.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startRun starts `flow run --temporal` of chain.yaml and waits for visit
// b to start in its mirror.
func startRun(t *testing.T, bin, dir, addr, runsDir string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, "run", "--temporal", addr, "--task-queue", "chain", "chain.yaml")
	cmd.Dir, cmd.Env = dir, temporalEnv(runsDir)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		runs, _ := filepath.Glob(filepath.Join(runsDir, "*"))
		if len(runs) == 1 && journalHas(runs[0], "start", "b") {
			return cmd, runs[0]
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatal("visit b never started in the mirror")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func temporalFlow(t *testing.T, bin, dir, runsDir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, temporalEnv(runsDir)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestTemporalResumeReattachesAfterTheClientDied(t *testing.T) {
	srv := devserver.Start(t)
	bin := flowBinary(t)
	dir := chainFlow(t)
	startWorker(t, bin, dir, srv.Address, "chain")
	runsDir := t.TempDir()
	client, run := startRun(t, bin, dir, srv.Address, runsDir)
	if err := client.Process.Kill(); err != nil { // the client dies; the run goes on
		t.Fatal(err)
	}
	_ = client.Wait()
	if out, err := temporalFlow(t, bin, dir, runsDir, "runs"); err != nil || !strings.Contains(out, "interrupted") {
		t.Errorf("flow runs of a mirror whose client died: %v\n%s", err, out)
	}
	out, err := temporalFlow(t, bin, dir, runsDir, "resume", filepath.Base(run))
	if err != nil {
		t.Fatalf("flow resume: %v\n%s", err, out)
	}
	if !strings.Contains(out, "re-attaching") && !strings.Contains(out, "ended on Temporal") {
		t.Errorf("flow resume did not say it re-attached:\n%s", out)
	}
	starts, ends := sideEffects(t, filepath.Join(dir, "ran"))
	for _, v := range []string{"a", "b", "c"} {
		if len(starts[v]) != 1 || ends[v] != 1 {
			t.Errorf("visit %s started %d and ended %d times, want once: re-attaching ran it again", v, len(starts[v]), ends[v])
		}
	}
	info, err := rundir.Inspect(run)
	if err != nil || info.Status != record.StatusSucceeded {
		t.Fatalf("the mirror after re-attaching: %+v, %v", info, err)
	}
	if _, err := os.Stat(filepath.Join(run, "output.json")); err != nil {
		t.Errorf("the re-attached mirror has no output.json: %v", err)
	}
}

func TestTemporalStoppedRunResumesInANewExecution(t *testing.T) {
	srv := devserver.Start(t)
	bin := flowBinary(t)
	dir := chainFlow(t)
	startWorker(t, bin, dir, srv.Address, "chain")
	runsDir := t.TempDir()
	client, run := startRun(t, bin, dir, srv.Address, runsDir)
	if err := client.Process.Signal(os.Interrupt); err != nil { // Ctrl-C stops the run on Temporal
		t.Fatal(err)
	}
	err := client.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("flow run --temporal after Ctrl-C: %v, want exit %d", err, exitInterrupted)
	}
	if info, err := rundir.Inspect(run); err != nil || info.Status != record.StatusStopped {
		t.Fatalf("the mirror after Ctrl-C: %+v, %v; want stopped", info, err)
	}
	out, err := temporalFlow(t, bin, dir, runsDir, "resume")
	if err != nil {
		t.Fatalf("flow resume: %v\n%s", err, out)
	}
	starts, ends := sideEffects(t, filepath.Join(dir, "ran"))
	if len(starts["a"]) != 1 || ends["a"] != 1 || ends["b"] != 1 || ends["c"] != 1 {
		t.Errorf("after the resume: starts %v, ends %v; want a once, b and c ended once", starts, ends)
	}
	info, err := rundir.Inspect(run)
	if err != nil || info.Status != record.StatusSucceeded {
		t.Fatalf("the mirror after the resume: %+v, %v", info, err)
	}
	snap, _ := rundir.ReadSnapshot(run)
	if snap == nil || snap.Temporal == nil || snap.Temporal.Base == 0 {
		t.Errorf("the snapshot does not record the new execution: %+v", snap)
	}
}
