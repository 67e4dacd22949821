package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flow/rundir"
)

// waitFlow journals each step's run into steps.log: a step before the
// wait, a slow branch beside it (held until the file go exists), and a
// step after it that writes the event's data.
const waitFlow = `name: deploy
nodes:
  - id: before
    run: echo before >> steps.log
  - id: both
    parallel:
      waits:
        - id: deployed
          wait: {event: deploy-done}
          output: {ok: boolean, url: string}
      slow:
        - id: build
          run: echo build >> steps.log; while [ ! -e go ]; do sleep 0.05; done
  - id: after
    run: echo "after $OK $URL" >> steps.log
    env: {OK: "${{ both.output.waits.ok }}", URL: "${{ both.output.waits.url }}"}
`

// waitFlowCmd runs the flow binary in dir and returns its exit code and output.
func waitFlowCmd(t *testing.T, bin, dir string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return ee.ExitCode(), out.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, out.String()
}

func stepsLog(t *testing.T, dir string) string {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(dir, "steps.log"))
	return string(b)
}

func theRun(t *testing.T, dir string) string {
	t.Helper()
	runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "2*"))
	if len(runs) != 1 {
		t.Fatalf("run directories: %v", runs)
	}
	return runs[0]
}

// TestWaitKilledSignalResume: a run killed (-9) while it waits for an
// event loses nothing; flow signal delivers the event to the run nobody
// holds; flow resume goes on: the step before the wait ran once, the one
// after it once, with the event's data.
func TestWaitKilledSignalResume(t *testing.T) {
	bin, dir := flowBinary(t), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "deploy.yaml"), []byte(waitFlow), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "deploy.yaml")
	cmd.Dir = dir
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	await(t, 20*time.Second, "the wait to be journaled", func() bool {
		runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "2*", "journal.jsonl"))
		if len(runs) != 1 {
			return false
		}
		b, _ := os.ReadFile(runs[0])
		return bytes.Contains(b, []byte(`"type":"waiting"`)) && strings.Contains(stepsLog(t, dir), "build")
	})
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	run := theRun(t, dir)
	id := filepath.Base(run)

	// A run nobody holds: the event is written into its directory.
	if code, o := waitFlowCmd(t, bin, dir, "signal", id, "deploy-done", "--data", `{"ok": true, "url": "https://x.example"}`); code != 0 {
		t.Fatalf("flow signal: exit %d\n%s", code, o)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, o := waitFlowCmd(t, bin, dir, "resume", id)
	if code != 0 {
		t.Fatalf("flow resume: exit %d\n%s\nfirst attempt:\n%s", code, o, out.String())
	}
	log := stepsLog(t, dir)
	if strings.Count(log, "before") != 1 || strings.Count(log, "after") != 1 {
		t.Fatalf("steps before and after the wait ran other than once:\n%s", log)
	}
	if !strings.Contains(log, "after true https://x.example") {
		t.Fatalf("the step after the wait did not get the event's data:\n%s", log)
	}
	// A second delivery of other data is refused, of the same data taken.
	if code, o := waitFlowCmd(t, bin, dir, "signal", id, "deploy-done", "--data", `{"ok": false, "url": ""}`); code != exitFailed || !strings.Contains(o, "other data") {
		t.Fatalf("a conflicting delivery: exit %d, want %d\n%s", code, exitFailed, o)
	}
	if code, o := waitFlowCmd(t, bin, dir, "signal", id, "deploy-done", "--data", `{"url":"https://x.example","ok":true}`); code != 0 {
		t.Fatalf("the same delivery again: exit %d\n%s", code, o)
	}
}

// TestWaitEndsRunWaiting: a run whose wait is not satisfied ends (exit 4)
// saying how it goes on; flow runs and flow show list it as waiting; a
// resume before the event waits again, and one after it goes on.
func TestWaitEndsRunWaiting(t *testing.T) {
	bin, dir := flowBinary(t), t.TempDir()
	flow := strings.Replace(waitFlow, "while [ ! -e go ]; do sleep 0.05; done", "true", 1)
	if err := os.WriteFile(filepath.Join(dir, "deploy.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	code, o := waitFlowCmd(t, bin, dir, "run", "deploy.yaml")
	id := filepath.Base(theRun(t, dir))
	if code != exitWaiting || !strings.Contains(o, "flow signal "+id+" deploy-done") || !strings.Contains(o, "flow resume "+id) {
		t.Fatalf("flow run: exit %d, want %d, saying how the run goes on\n%s", code, exitWaiting, o)
	}
	for _, args := range [][]string{{"runs"}, {"show", id}} {
		_, o := waitFlowCmd(t, bin, dir, args...)
		if !strings.Contains(o, "waiting") || !strings.Contains(o, "event deploy-done since") {
			t.Errorf("flow %s does not list the run as waiting on its event:\n%s", args[0], o)
		}
	}
	if code, o := waitFlowCmd(t, bin, dir, "resume", id); code != exitWaiting {
		t.Fatalf("a resume before the event: exit %d, want %d\n%s", code, exitWaiting, o)
	}
	info, err := rundir.Inspect(filepath.Join(dir, ".flow", "runs", id))
	if err != nil || info.Status != rundir.StatusWaiting || len(info.Waiting) != 1 {
		t.Fatalf("after a resume that waits again: %+v %v", info, err)
	}
	waitFlowCmd(t, bin, dir, "signal", id, "deploy-done", "--data", `{"ok": false, "url": "u"}`)
	if code, o := waitFlowCmd(t, bin, dir, "resume", id); code != 0 {
		t.Fatalf("a resume after the event: exit %d\n%s", code, o)
	}
	if log := stepsLog(t, dir); strings.Count(log, "before") != 1 || strings.Count(log, "build") != 1 || !strings.Contains(log, "after false u") {
		t.Fatalf("steps:\n%s", log)
	}
}

// TestWaitEventBeforeWait: an event delivered while the run has not
// reached its wait yet is kept, and taken when the wait is reached: the
// run never waits.
func TestWaitEventBeforeWait(t *testing.T) {
	bin, dir := flowBinary(t), t.TempDir()
	flow := strings.Replace(waitFlow, "echo before >> steps.log", "echo before >> steps.log; while [ ! -e go ]; do sleep 0.05; done", 1)
	flow = strings.Replace(flow, "; while [ ! -e go ]; do sleep 0.05; done\n  - id: after", "\n  - id: after", 1)
	if err := os.WriteFile(filepath.Join(dir, "deploy.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "deploy.yaml")
	cmd.Dir = dir
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	await(t, 20*time.Second, "the step before the wait to start", func() bool { return strings.Contains(stepsLog(t, dir), "before") })
	id := filepath.Base(theRun(t, dir))
	if code, o := waitFlowCmd(t, bin, dir, "signal", id, "deploy-done", "--data", `{"ok": true, "url": "early"}`); code != 0 {
		t.Fatalf("flow signal to a running run: exit %d\n%s", code, o)
	}
	if code, o := waitFlowCmd(t, bin, dir, "signal", id, "deploy-done", "--data", `{"ok": true, "url": "late"}`); code != exitFailed {
		t.Fatalf("a conflicting second delivery: exit %d, want %d\n%s", code, exitFailed, o)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := cmd.Wait(); err != nil && !errors.As(err, &ee) || err != nil {
		t.Fatalf("flow run: %v\n%s", err, out.String())
	}
	if log := stepsLog(t, dir); !strings.Contains(log, "after true early") || strings.Count(log, "after") != 1 {
		t.Fatalf("steps:\n%s", log)
	}
}
