package main

import (
	"bytes"
	"context"
	"errors"
	"net/http"
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
)

// The local wait tests (wait_test.go) on Temporal: two workers, one
// killed (-9) while the run waits; the workflow holds the wait, on a
// timer or for a signal, and no worker is needed until it ends.

// waitCluster starts two workers of queue in dir on srv, and returns them
// and the environment of flow commands of runs under runsDir.
func waitCluster(t *testing.T, bin, dir, addr, queue, runsDir string) (w1, w2 *exec.Cmd, env []string) {
	t.Helper()
	w1 = startWorker(t, bin, dir, addr, queue)
	w2 = startWorker(t, bin, dir, addr, queue)
	return w1, w2, temporalEnv(runsDir)
}

// flowEnv runs the flow binary in dir with env, and returns its exit code
// and output.
func flowEnv(t *testing.T, bin, dir string, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return exitCode(err), out.String()
}

// onlyRunHas says whether the only run under runsDir journaled s, and
// gives its directory.
func onlyRunHas(runsDir, s string) (string, bool) {
	runs, _ := filepath.Glob(filepath.Join(runsDir, "2*", "journal.jsonl"))
	if len(runs) != 1 {
		return "", false
	}
	b, _ := os.ReadFile(runs[0])
	return filepath.Dir(runs[0]), bytes.Contains(b, []byte(s))
}

// TestWaitTemporalKilledWorkerSignalResume: a run on Temporal that waits
// for an event, its client and one of its two workers killed (-9) during
// the wait (once the branch beside it ended), lists as waiting; flow signal delivers the event to its
// workflow; flow resume follows it to its end: the step before the wait
// ran once, the one after it once, with the event's data; a second
// delivery of other data is refused, of the same data taken.
func TestWaitTemporalKilledWorkerSignalResume(t *testing.T) {
	srv := devserver.Start(t)
	bin, dir, runsDir := flowBinary(t), t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "deploy.yaml"), []byte(waitFlow), 0o644); err != nil {
		t.Fatal(err)
	}
	w1, _, env := waitCluster(t, bin, dir, srv.Address, "waits", runsDir)
	cmd := exec.Command(bin, "run", "--temporal", srv.Address, "--task-queue", "waits", "deploy.yaml")
	cmd.Dir, cmd.Env = dir, env
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var run string
	await(t, 60*time.Second, "the wait to be journaled", func() bool {
		var ok bool
		run, ok = onlyRunHas(runsDir, `"type":"waiting"`)
		return ok && strings.Contains(stepsLog(t, dir), "build")
	})
	id := filepath.Base(run)
	// The branch beside the wait ends first (a command a killed worker
	// began is never run again by itself: docs/temporal.md), so that the
	// run holds nothing but its wait.
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	await(t, 60*time.Second, "the branch beside the wait to end", func() bool { return journalHas(run, "end", "both/slow/build") })
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if err := w1.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"runs"}, {"show", id}} {
		if _, o := flowEnv(t, bin, dir, env, args...); !strings.Contains(o, "waiting at both/waits/deployed: waiting on event deploy-done since") {
			t.Errorf("flow %s does not list the run as waiting on its event:\n%s", args[0], o)
		}
	}
	if code, o := flowEnv(t, bin, dir, env, "signal", id, "deploy-done", "--data", `{"ok": true, "url": "https://x.example"}`); code != 0 || !strings.Contains(o, "delivered event deploy-done") {
		t.Fatalf("flow signal: exit %d\n%s", code, o)
	}
	if code, o := flowEnv(t, bin, dir, env, "resume", id); code != 0 {
		t.Fatalf("flow resume: exit %d\n%s\nfirst attempt:\n%s", code, o, out.String())
	}
	log := stepsLog(t, dir)
	if strings.Count(log, "before") != 1 || strings.Count(log, "after") != 1 || !strings.Contains(log, "after true https://x.example") {
		t.Fatalf("steps before and after the wait ran other than once, or without the event's data:\n%s", log)
	}
	if info, err := rundir.Inspect(run); err != nil || info.Status != record.StatusSucceeded || len(info.Waiting) != 0 {
		t.Fatalf("the mirrored run: %+v %v", info, err)
	}
	if code, o := flowEnv(t, bin, dir, env, "signal", id, "deploy-done", "--data", `{"ok": false, "url": ""}`); code != exitFailed || !strings.Contains(o, "other data") {
		t.Fatalf("a conflicting delivery: exit %d, want %d\n%s", code, exitFailed, o)
	}
	if code, o := flowEnv(t, bin, dir, env, "signal", id, "deploy-done", "--data", `{"url":"https://x.example","ok":true}`); code != 0 || !strings.Contains(o, "already") {
		t.Fatalf("the same delivery again: exit %d\n%s", code, o)
	}
}

// beforeItsWait is a run of waitFlow on Temporal (two workers, flow run
// --temporal) whose step before the wait runs until the file go exists in
// dir.
type beforeItsWait struct {
	bin, dir, id string
	env          []string
	cmd          *exec.Cmd
	out          *syncBuffer
}

// startBeforeItsWait starts a beforeItsWait run on task queue queue of a
// dev server of its own and returns once its step before the wait runs.
func startBeforeItsWait(t *testing.T, queue string) *beforeItsWait {
	t.Helper()
	srv := devserver.Start(t)
	r := &beforeItsWait{bin: flowBinary(t), dir: t.TempDir(), out: &syncBuffer{}}
	runsDir := t.TempDir()
	flow := strings.Replace(waitFlow, "echo before >> steps.log", "echo before >> steps.log; while [ ! -e go ]; do sleep 0.05; done", 1)
	flow = strings.Replace(flow, "; while [ ! -e go ]; do sleep 0.05; done\n  - id: after", "\n  - id: after", 1)
	if err := os.WriteFile(filepath.Join(r.dir, "deploy.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, r.env = waitCluster(t, r.bin, r.dir, srv.Address, queue, runsDir)
	r.cmd = exec.Command(r.bin, "run", "--temporal", srv.Address, "--task-queue", queue, "deploy.yaml")
	r.cmd.Dir, r.cmd.Env = r.dir, r.env
	r.cmd.Stdout, r.cmd.Stderr = r.out, r.out
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.cmd.Process.Kill() })
	await(t, 60*time.Second, "the step before the wait to start", func() bool { return strings.Contains(stepsLog(t, r.dir), "before") })
	run, _ := onlyRunHas(runsDir, "")
	r.id = filepath.Base(run)
	return r
}

// TestWaitTemporalEventBeforeWait: an event signalled while the run has
// not reached its wait is kept by the workflow and taken when the wait is
// reached; a conflicting second delivery is refused.
func TestWaitTemporalEventBeforeWait(t *testing.T) {
	r := startBeforeItsWait(t, "early")
	bin, dir, env, cmd, out, id := r.bin, r.dir, r.env, r.cmd, r.out, r.id
	if code, o := flowEnv(t, bin, dir, env, "signal", id, "deploy-done", "--data", `{"ok": true, "url": "early"}`); code != 0 {
		t.Fatalf("flow signal to a running run: exit %d\n%s", code, o)
	}
	if code, o := flowEnv(t, bin, dir, env, "signal", id, "deploy-done", "--data", `{"ok": true, "url": "late"}`); code != exitFailed || !strings.Contains(o, "other data") {
		t.Fatalf("a conflicting second delivery: exit %d, want %d\n%s", code, exitFailed, o)
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("flow run: %v\n%s", err, out.String())
	}
	if log := stepsLog(t, dir); !strings.Contains(log, "after true early") || strings.Count(log, "after") != 1 || strings.Count(log, "before") != 1 {
		t.Fatalf("steps:\n%s", log)
	}
}

// TestWaitTemporalEventSurvivesAStop: an event delivered to a run on
// Temporal before its wait, the run then stopped (Ctrl-C) and resumed in
// a new execution, is still delivered: the sender was told it was, so
// the resumed wait takes it rather than waiting for it again.
func TestWaitTemporalEventSurvivesAStop(t *testing.T) {
	r := startBeforeItsWait(t, "stopped")
	bin, dir, env, cmd, out, id := r.bin, r.dir, r.env, r.cmd, r.out, r.id
	if code, o := flowEnv(t, bin, dir, env, "signal", id, "deploy-done", "--data", `{"ok": true, "url": "kept"}`); code != 0 {
		t.Fatalf("flow signal to a running run: exit %d\n%s", code, o)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != exitInterrupted {
		t.Fatalf("flow run after Ctrl-C: %v, want exit %d\n%s", err, exitInterrupted, out.String())
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Without the event the resumed run would wait for it for ever.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	resume := exec.CommandContext(ctx, bin, "resume", id)
	resume.Dir, resume.Env = dir, env
	o, err := resume.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the resumed run did not end in 90 s: the event delivered before the stop was lost\n%s", o)
	}
	if err != nil {
		t.Fatalf("flow resume: %v\n%s\nfirst attempt:\n%s", err, o, out.String())
	}
	if log := stepsLog(t, dir); strings.Count(log, "after") != 1 || !strings.Contains(log, "after true kept") {
		t.Fatalf("the step after the wait ran other than once, or without the event's data:\n%s", log)
	}
	if code, o := flowEnv(t, bin, dir, env, "signal", id, "deploy-done", "--data", `{"ok": false, "url": "other"}`); code != exitFailed || !strings.Contains(o, "other data") {
		t.Fatalf("a conflicting delivery after the resume: exit %d, want %d\n%s", code, exitFailed, o)
	}
}

// TestWaitTemporalServeLetsGo: under flow serve --temporal --max-runs 1,
// a run that holds nothing but its wait frees its slot (another run
// starts and ends meanwhile), reads as waiting and counts in
// flow_runs_waiting; the server follows it again when its event comes,
// by the API or by flow signal, or when its time comes, and each run
// ends with what came, each step once; one is stopped through the API.
func TestWaitTemporalServeLetsGo(t *testing.T) {
	srv := devserver.Start(t)
	bin, dir := flowBinary(t), t.TempDir()
	writeFlows(t, dir, map[string]string{
		"hook.yaml": "name: hook\ninput: {tag: string}\nnodes:\n  - {id: before, run: echo before >> hook.log}\n" +
			"  - {id: ci, wait: {event: ci-done}, output: {green: boolean}}\n" +
			"  - id: after\n    run: echo after \"$T\" \"$G\" >> hook.log\n    env: {G: \"${{ ci.output.green }}\", T: \"${{ input.tag }}\"}\n",
		"pause.yaml": "name: pause\nnodes:\n  - {id: pause, wait: {for: 3s}}\n  - {id: after, run: echo after >> pause.log}\n",
		"quick.yaml": "name: quick\nnodes:\n  - {id: q, run: echo quick >> quick.log}\n",
	})
	_, _, env := waitCluster(t, bin, dir, srv.Address, "letgo", t.TempDir())
	s := startServeEnv(t, bin, dir, env[len(os.Environ()):], "--poll", "200ms", "--max-runs", "1", "--temporal", srv.Address, "--task-queue", "letgo")
	start := func(flow, input string) string {
		t.Helper()
		code, m := s.call("POST", "/api/flows/"+flow+"/runs", input)
		if code != http.StatusAccepted {
			t.Fatalf("starting %s: %d %v", flow, code, m)
		}
		id, _ := m["id"].(string)
		return id
	}
	waiting := func(id string) {
		t.Helper()
		await(t, 60*time.Second, "run "+id+" to be let go while it waits", func() bool { return runStatus(s, id) == "waiting" })
	}
	api := start("hook", `{"tag": "api"}`)
	waiting(api)
	quick := start("quick", "")
	await(t, 60*time.Second, "another run to take the freed slot and end", func() bool { return runStatus(s, quick) == "succeeded" })
	cli := start("hook", `{"tag": "cli"}`)
	waiting(cli)
	if _, page := s.call("GET", "/metrics", ""); !strings.Contains(page["_body"].(string), "flow_runs_waiting 2") {
		t.Errorf("/metrics does not count the two runs let go while they wait:\n%s", page["_body"])
	}
	if code, m := s.call("POST", "/api/runs/"+api+"/events/ci-done", `{"green": true}`); code != http.StatusOK {
		t.Fatalf("delivering by the API: %d %v", code, m)
	}
	if code, o := flowEnv(t, bin, dir, env, "signal", cli, "ci-done", "--data", `{"green": false}`); code != 0 {
		t.Fatalf("flow signal: exit %d\n%s", code, o)
	}
	pause := start("pause", "")
	for _, id := range []string{api, cli, pause} {
		await(t, 60*time.Second, "run "+id+" to be followed again and end", func() bool { return runStatus(s, id) == "succeeded" })
	}
	// One let go is stopped as a running one is: its workflow is cancelled.
	stopped := start("hook", `{"tag": "stopped"}`)
	waiting(stopped)
	if code, m := s.call("POST", "/api/runs/"+stopped+"/stop", ""); code != http.StatusOK {
		t.Fatalf("stopping a run let go while it waits: %d %v", code, m)
	}
	await(t, 60*time.Second, "the stopped run to end stopped", func() bool { return runStatus(s, stopped) == "stopped" })
	log := readFile(t, filepath.Join(dir, "hook.log"))
	if strings.Count(log, "before") != 3 || strings.Count(log, "after") != 2 || strings.Count(log, "after api true") != 1 || strings.Count(log, "after cli false") != 1 {
		t.Fatalf("hook.log:\n%s", log)
	}
	if log := readFile(t, filepath.Join(dir, "pause.log")); log != "after\n" {
		t.Fatalf("pause.log: %q", log)
	}
	if _, page := s.call("GET", "/metrics", ""); !strings.Contains(page["_body"].(string), "flow_runs_waiting 0") {
		t.Errorf("/metrics still counts runs as waiting:\n%s", page["_body"])
	}
}

// TestWaitTemporalServeFollowsARunThatAsks: under flow serve --temporal,
// a run whose wait has a question open beside it is not let go (the
// question is answered through the server, which follows the run); once
// it is answered, only the wait is left and the run is let go, then its
// event brings it back to its end.
func TestWaitTemporalServeFollowsARunThatAsks(t *testing.T) {
	srv := devserver.Start(t)
	bin, dir := flowBinary(t), t.TempDir()
	writeFlows(t, dir, map[string]string{"gate.yaml": "name: gate\nnodes:\n  - id: both\n    parallel:\n" +
		"      approve:\n        - {id: ok, ask: Ship it?, options: [ship, hold], default: hold, timeout: 1h}\n" +
		"      hook:\n        - {id: ci, wait: {event: ci-done}}\n" +
		"  - {id: after, run: echo after >> gate.log}\n"})
	_, _, env := waitCluster(t, bin, dir, srv.Address, "asks", t.TempDir())
	s := startServeEnv(t, bin, dir, env[len(os.Environ()):], "--poll", "200ms", "--temporal", srv.Address, "--task-queue", "asks")
	code, m := s.call("POST", "/api/flows/gate/runs", "")
	if code != http.StatusAccepted {
		t.Fatalf("starting gate: %d %v", code, m)
	}
	id, _ := m["id"].(string)
	await(t, 60*time.Second, "the question and the wait", func() bool {
		_, v := s.call("GET", "/api/runs/"+id, "")
		asks, _ := v["asks"].([]any)
		return len(asks) == 1 && waitsOn(s, id) == "event ci-done"
	})
	time.Sleep(2 * time.Second) // eight chances to let go, wrongly
	if st := runStatus(s, id); st != "running" {
		t.Fatalf("a run with a question open beside its wait is %s, want running (followed)", st)
	}
	if code, m := s.call("POST", "/api/runs/"+id+"/asks/both/approve/ok", `{"answer": "ship"}`); code != http.StatusOK {
		t.Fatalf("answering: %d %v", code, m)
	}
	await(t, 60*time.Second, "the run to be let go once only its wait is left", func() bool { return runStatus(s, id) == "waiting" })
	if code, m := s.call("POST", "/api/runs/"+id+"/events/ci-done", ""); code != http.StatusOK {
		t.Fatalf("delivering: %d %v", code, m)
	}
	await(t, 60*time.Second, "the run to end", func() bool { return runStatus(s, id) == "succeeded" })
	if log := readFile(t, filepath.Join(dir, "gate.log")); log != "after\n" {
		t.Fatalf("gate.log: %q", log)
	}
}

// TestWaitTemporalServeRestart: under flow serve --temporal, a run of
// wait: {for: 4s}, the server stopped and one of two workers killed
// during the wait, ends by itself, each step once, and the next server
// mirrors its end; an event's wait takes the event of the API, whose
// second delivery of other data is a 409.
func TestWaitTemporalServeRestart(t *testing.T) {
	srv := devserver.Start(t)
	bin, dir := flowBinary(t), t.TempDir()
	writeFlows(t, dir, map[string]string{
		"pause.yaml": "name: pause\nnodes:\n  - {id: before, run: echo before >> pause.log}\n  - {id: pause, wait: {for: 4s}}\n  - {id: after, run: echo after >> pause.log}\n",
		"hook.yaml": "name: hook\nnodes:\n  - {id: before, run: echo before >> hook.log}\n" +
			"  - {id: ci, wait: {event: ci-done, timeout: 1h, default: {green: false}}, output: {green: boolean}}\n" +
			"  - id: after\n    run: echo after \"$G\" >> hook.log\n    env: {G: \"${{ ci.output.green }}\"}\n",
	})
	w1, _, env := waitCluster(t, bin, dir, srv.Address, "served", t.TempDir())
	env = env[len(os.Environ()):] // the flags below say where runs go
	serve := func() *served {
		return startServeEnv(t, bin, dir, env, "--poll", "200ms", "--temporal", srv.Address, "--task-queue", "served")
	}
	s := serve()
	code, m := s.call("POST", "/api/flows/pause/runs", "")
	if code != http.StatusAccepted {
		t.Fatalf("starting pause: %d %v", code, m)
	}
	pause, _ := m["id"].(string)
	await(t, 30*time.Second, "the run to wait", func() bool { return waitsOn(s, pause) == "time" })
	start := time.Now()
	s.sigterm()
	if err := w1.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Second) // the wait ends while no server follows the run
	s = serve()
	await(t, 30*time.Second, "the waiting run to end by itself", func() bool { return runStatus(s, pause) == "succeeded" })
	if b, _ := os.ReadFile(filepath.Join(dir, "pause.log")); string(b) != "before\nafter\n" {
		t.Fatalf("steps of the run that waited across a restart:\n%s", b)
	}
	t.Logf("the wait of 4s ended, and the next server mirrored it, %s after the first server stopped", time.Since(start).Round(time.Millisecond))

	code, m = s.call("POST", "/api/flows/hook/runs", "")
	if code != http.StatusAccepted {
		t.Fatalf("starting hook: %d %v", code, m)
	}
	hook, _ := m["id"].(string)
	await(t, 30*time.Second, "the run to wait", func() bool { return waitsOn(s, hook) == "event ci-done" })
	_, v := s.call("GET", "/api/runs/"+hook, "")
	webhook, _ := v["waiting"].([]any)[0].(map[string]any)["webhook"].(string)
	if _, page := s.call("GET", "/runs/"+hook, ""); !strings.Contains(page["_body"].(string), "Waiting on <code>event ci-done</code>") || webhook == "" {
		t.Errorf("the run page does not say what the run waits on, or the API no webhook (%q):\n%s", webhook, page["_body"])
	}
	if code, m := s.call("POST", "/api/runs/"+hook+"/events/ci-done", `{"green": true}`); code != http.StatusOK || m["delivered"] != true {
		t.Fatalf("POST an event: %d %v", code, m)
	}
	if code, m := s.call("POST", "/api/runs/"+hook+"/events/ci-done", `{"green": false}`); code != http.StatusConflict {
		t.Fatalf("a conflicting delivery: %d %v, want 409", code, m)
	}
	if code, m := s.call("POST", strings.TrimPrefix(webhook, "http://"+strings.TrimPrefix(s.url, "http://")), `{ "green": true }`); code != http.StatusOK || m["already"] != true {
		t.Fatalf("the same delivery again, by the webhook: %d %v", code, m)
	}
	await(t, 30*time.Second, "the run to end", func() bool { return runStatus(s, hook) == "succeeded" })
	if b, _ := os.ReadFile(filepath.Join(dir, "hook.log")); string(b) != "before\nafter true\n" {
		t.Fatalf("steps of the run woken by its event:\n%s", b)
	}
}

// waitsOn is what the run's first wait waits on, as the API shows it.
func waitsOn(s *served, id string) string {
	_, v := s.call("GET", "/api/runs/"+id, "")
	ws, _ := v["waiting"].([]any)
	if len(ws) == 0 {
		return ""
	}
	w, _ := ws[0].(map[string]any)
	if e, _ := w["event"].(string); e != "" {
		return "event " + e
	}
	return "time"
}
