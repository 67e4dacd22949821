package main

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flow/rundir"
)

// zonedRE is a time as the pages write it: dated and zoned.
var zonedRE = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [A-Za-z0-9+-]+`)

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

// TestWaitServeRestart: a run of wait: {for: 4s} under flow serve, the
// server stopped during the wait and started again, ends by itself, each
// step once; an event's wait is woken by the API and by its webhook, whose
// token only the run's page and API show; /metrics counts waiting runs.
func TestWaitServeRestart(t *testing.T) {
	bin, dir := flowBinary(t), t.TempDir()
	writeFlows(t, dir, map[string]string{
		"pause.yaml": "name: pause\nnodes:\n  - {id: before, run: echo before >> pause.log}\n  - {id: pause, wait: {for: 4s}}\n  - {id: after, run: echo after >> pause.log}\n",
		"hook.yaml": "name: hook\nnodes:\n  - {id: before, run: echo before >> hook.log}\n" +
			"  - {id: ci, wait: {event: ci-done}, output: {green: boolean}}\n" +
			"  - {id: review, wait: {event: review}}\n" +
			"  - id: after\n    run: echo after \"$G\" >> hook.log\n    env: {G: \"${{ ci.output.green }}\"}\n",
	})
	s := startServe(t, bin, dir, "--poll", "200ms")
	code, m := s.call("POST", "/api/flows/pause/runs", "")
	if code != http.StatusAccepted {
		t.Fatalf("starting pause: %d %v", code, m)
	}
	pause, _ := m["id"].(string)
	await(t, 10*time.Second, "the run to wait", func() bool { return runStatus(s, pause) == "waiting" })
	s.sigterm()
	s = startServe(t, bin, dir, "--poll", "200ms")
	await(t, 20*time.Second, "the waiting run to end by itself", func() bool { return runStatus(s, pause) == "succeeded" })
	if b, _ := os.ReadFile(filepath.Join(dir, "pause.log")); string(b) != "before\nafter\n" {
		t.Fatalf("steps of the run that waited across a restart:\n%s", b)
	}

	code, m = s.call("POST", "/api/flows/hook/runs", "")
	if code != http.StatusAccepted {
		t.Fatalf("starting hook: %d %v", code, m)
	}
	hook, _ := m["id"].(string)
	await(t, 10*time.Second, "the run to wait", func() bool { return runStatus(s, hook) == "waiting" })
	if _, page := s.call("GET", "/metrics", ""); !strings.Contains(page["_body"].(string), "flow_runs_waiting 1") {
		t.Errorf("/metrics does not count the waiting run:\n%s", page["_body"])
	}
	if code, m := s.call("POST", "/api/runs/"+hook+"/events/ci-done", `{"green": true}`); code != http.StatusOK {
		t.Fatalf("POST an event: %d %v", code, m)
	}
	if code, m := s.call("POST", "/api/runs/"+hook+"/events/ci-done", `{"green": false}`); code != http.StatusConflict {
		t.Fatalf("a conflicting delivery: %d %v, want 409", code, m)
	}
	var webhook string
	await(t, 10*time.Second, "the run to wait on its second event", func() bool {
		_, v := s.call("GET", "/api/runs/"+hook, "")
		ws, _ := v["waiting"].([]any)
		if len(ws) != 1 {
			return false
		}
		w, _ := ws[0].(map[string]any)
		webhook, _ = w["webhook"].(string)
		return w["event"] == "review" && webhook != ""
	})
	_, page := s.call("GET", "/runs/"+hook, "")
	if body := page["_body"].(string); !strings.Contains(body, "Waiting on <code>event review</code>") || !strings.Contains(body, webhook) || !zonedRE.MatchString(body) {
		t.Errorf("the run page does not say what the run waits on, since when, and its webhook:\n%s", body)
	}
	path := strings.TrimPrefix(webhook, "http://"+strings.TrimPrefix(s.url, "http://"))
	wrong := path[:len(path)-1] + "0"
	if strings.HasSuffix(path, "0") {
		wrong = path[:len(path)-1] + "1"
	}
	if code, _ := s.call("POST", wrong, `"ok"`); code != http.StatusNotFound {
		t.Errorf("a webhook with a wrong token: %d, want 404", code)
	}
	if code, m := s.call("POST", path, `"approved"`); code != http.StatusOK {
		t.Fatalf("the webhook: %d %v", code, m)
	}
	await(t, 20*time.Second, "the run to end", func() bool { return runStatus(s, hook) == "succeeded" })
	if b, _ := os.ReadFile(filepath.Join(dir, "hook.log")); string(b) != "before\nafter true\n" {
		t.Fatalf("steps of the run woken by events:\n%s", b)
	}
}

// TestWaitValidatesOnTemporal: waits run on Temporal (the workflow holds
// them: wait_temporal_test.go); flow validate --temporal takes the flow.
func TestWaitValidatesOnTemporal(t *testing.T) {
	bin, dir := flowBinary(t), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "deploy.yaml"), []byte(waitFlow), 0o644); err != nil {
		t.Fatal(err)
	}
	code, o := waitFlowCmd(t, bin, dir, "validate", "--temporal", "127.0.0.1:1", "deploy.yaml")
	if code != 0 || !strings.Contains(o, "deploy.yaml: ok") {
		t.Fatalf("exit %d, want 0: a wait runs on Temporal\n%s", code, o)
	}
}

// waitsSetup writes the flow of docs/waits.md, its first yaml block, as
// deploy.yaml: the page's lines run the flow it shows.
func waitsSetup(t *testing.T, d *docSession) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "waits.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("docs/waits.md has no yaml block")
	}
	if err := os.WriteFile(filepath.Join(d.dir, "deploy.yaml"), m[1], 0o644); err != nil {
		t.Fatal(err)
	}
}

func waitsSteps(d *docSession) []docStep {
	t := d.t
	return []docStep{
		{line: "flow run deploy.yaml", run: func(d *docSession, line string) {
			out, code := d.shExit(line, time.Minute)
			if code != exitWaiting || !strings.Contains(out, "flow signal ") || !strings.Contains(out, "flow resume ") {
				t.Fatalf("%s: exit %d, want %d, saying how it goes on\n%s", line, code, exitWaiting, out)
			}
		}},
		{line: "flow runs", run: func(d *docSession, line string) {
			if out := d.sh(line, time.Minute); !strings.Contains(out, "waiting at deployed: waiting on event deploy-done since") || !strings.Contains(out, ", until ") {
				t.Fatalf("%s:\n%s", line, out)
			}
		}},
		{line: `flow signal last deploy-done --data '{"ok": true, "url": "https://example.com"}'`, run: func(d *docSession, line string) {
			if out := d.sh(line, time.Minute); !strings.Contains(out, "delivered event deploy-done") {
				t.Fatalf("%s:\n%s", line, out)
			}
		}},
		{line: "flow resume last", run: func(d *docSession, line string) {
			if out := d.sh(line, time.Minute); !strings.Contains(out, "succeeded") {
				t.Fatalf("%s:\n%s", line, out)
			}
			b, _ := os.ReadFile(filepath.Join(d.dir, "steps.log"))
			if string(b) != "built\ndeployed true at https://example.com\n" {
				t.Fatalf("steps:\n%s", b)
			}
		}},
	}
}
