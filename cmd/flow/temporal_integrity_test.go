package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/devserver"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/temporal"
)

// keyOfSeed is a temporal.key (32 bytes, base64) made from seed.
func keyOfSeed(seed string) string {
	return base64.StdEncoding.EncodeToString([]byte((seed + strings.Repeat("-", 32))[:32]))
}

func keyID(t *testing.T, key string) string {
	t.Helper()
	k, err := temporal.ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return k.ID()
}

// startFlowWorker starts `flow worker` with env (the configuration's
// keys), its output in the buffer it returns; it is stopped when the test
// ends.
func startFlowWorker(t *testing.T, bin, dir, addr, queue string, env []string, flags ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"worker", "--temporal", addr, "--task-queue", queue, "--runs-dir", t.TempDir()}, flags...)...)
	cmd.Dir = dir
	cmd.Env = append(withoutKeys(temporalEnv(t.TempDir())), env...)
	out := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
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
	return cmd, out
}

// withoutKeys is env without the Temporal keys of the test's own
// environment: each process here gets its keys from the test.
func withoutKeys(env []string) []string {
	var out []string
	for _, e := range env {
		if !strings.HasPrefix(e, "FLOW_TEMPORAL_KEY=") && !strings.HasPrefix(e, "FLOW_TEMPORAL_OLD_KEYS=") {
			out = append(out, e)
		}
	}
	return out
}

// waitFor polls ok every 200 ms for up to d, failing the test with what.
func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Key rotation with two workers: the run's client and one worker seal
// with the new key and still open the old, the other worker is not
// rotated yet (it seals with the old key and opens the new): the run's
// visits spread over both, its history holds payloads of both keys, and
// it finishes.
func TestTemporalRotatedKeysTwoWorkersFinishARun(t *testing.T) {
	srv := devserver.Start(t)
	bin := flowBinary(t)
	oldKey, newKey := keyOfSeed("the old key"), keyOfSeed("the new key")
	dir := t.TempDir()
	flow := "name: spread\nnodes:\n  - id: each\n    map: '[1, 2, 3, 4, 5, 6]'\n    concurrency: 6\n    max: 6\n    do: [{id: step, run: 'sleep 0.5; echo ${{ item }}'}]\n"
	if err := os.WriteFile(filepath.Join(dir, "spread.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	startFlowWorker(t, bin, dir, srv.Address, "rotate", []string{"FLOW_TEMPORAL_KEY=" + oldKey, "FLOW_TEMPORAL_OLD_KEYS=" + newKey}, "--concurrency", "1")
	startFlowWorker(t, bin, dir, srv.Address, "rotate", []string{"FLOW_TEMPORAL_KEY=" + newKey, "FLOW_TEMPORAL_OLD_KEYS=" + oldKey}, "--concurrency", "1")
	runsDir := t.TempDir()
	cmd := exec.Command(bin, "run", "--temporal", srv.Address, "--task-queue", "rotate", "spread.yaml")
	cmd.Dir = dir
	cmd.Env = append(withoutKeys(temporalEnv(runsDir)), "FLOW_TEMPORAL_KEY="+newKey, "FLOW_TEMPORAL_OLD_KEYS="+oldKey)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flow run --temporal with rotated keys: %v\n%s", err, out)
	}
	runs, _ := rundir.List(runsDir)
	if len(runs) != 1 || runs[0].Status != record.StatusSucceeded {
		t.Fatalf("runs: %+v", runs)
	}
	workers := map[string]bool{}
	for _, f := range runs[0].Facts {
		if f.Type == record.FactEnd && f.Worker != "" {
			workers[f.Worker] = true
		}
	}
	if len(workers) != 2 {
		t.Errorf("the visits ran on %v, want both workers", workers)
	}
	show := exec.Command(clitest.Tool(t, "temporal"), "workflow", "show", "--address", srv.Address, "--workflow-id", runs[0].ID, "--output", "json")
	history, err := show.CombinedOutput()
	if err != nil {
		t.Fatalf("temporal workflow show: %v\n%s", err, history)
	}
	for _, k := range []string{oldKey, newKey} {
		if id := base64.StdEncoding.EncodeToString([]byte(keyID(t, k))); !bytes.Contains(history, []byte(id)) {
			t.Errorf("the history holds no payload sealed with key %s", keyID(t, k))
		}
	}
	// Once every run sealed with the old key ended, the old key goes.
	if out, err := temporalFlow(t, bin, dir, runsDir, "show"); err != nil || !strings.Contains(out, "succeeded") {
		t.Errorf("flow show: %v\n%s", err, out)
	}
}

// A worker without the run's key holds the run up but does not fail it:
// flow show says which worker and why while it waits, and a worker with
// the key then finishes it. On the code before, the run failed at once
// (exit 1) with a failure only the keyless worker could read.
func TestTemporalAWorkerWithoutTheKeyHoldsTheRunAndShowSaysWhy(t *testing.T) {
	srv := devserver.Start(t)
	bin := flowBinary(t)
	key := keyOfSeed("the run's key")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "one.yaml"), []byte("name: one\nnodes:\n  - {id: t, run: [echo, hi]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	keyless, _ := startFlowWorker(t, bin, dir, srv.Address, "keyed", nil)
	runsDir := t.TempDir()
	cmd := exec.Command(bin, "run", "--temporal", srv.Address, "--task-queue", "keyed", "one.yaml")
	cmd.Dir = dir
	cmd.Env = append(withoutKeys(temporalEnv(runsDir)), "FLOW_TEMPORAL_KEY="+key)
	client := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = client, client
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var waited error
	go func() { waited = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("flow run:\n%s", client.String())
			runs, _ := filepath.Glob(filepath.Join(runsDir, "*", "events.jsonl"))
			for _, r := range runs {
				b, _ := os.ReadFile(r)
				t.Logf("%s:\n%s", r, b)
			}
		}
	})
	var show string
	waitFor(t, 60*time.Second, "flow show saying the keyless worker cannot open the run", func() bool {
		select {
		case <-done:
			t.Fatalf("flow run ended while only a keyless worker ran (%v):\n%s", waited, client.String())
		default:
		}
		var err error
		if show, err = temporalFlow(t, bin, dir, runsDir, "show"); err != nil {
			t.Logf("flow show: %v\n%s", err, show)
		}
		return strings.Contains(show, "Temporal: worker") && strings.Contains(show, "cannot open")
	})
	if !strings.Contains(show, keyID(t, key)) || !strings.Contains(show, "running") {
		t.Errorf("flow show of the held run:\n%s\nwant it running, naming the key the worker lacks", show)
	}
	_ = keyless.Process.Signal(syscall.SIGTERM)
	startFlowWorker(t, bin, dir, srv.Address, "keyed", []string{"FLOW_TEMPORAL_KEY=" + key})
	select {
	case <-done:
		if waited != nil {
			t.Fatalf("flow run once a worker with the key came: %v\n%s", waited, client.String())
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("the run did not end once a worker with the key came:\n%s", client.String())
	}
	if out, _ := temporalFlow(t, bin, dir, runsDir, "show"); !strings.Contains(out, "succeeded") {
		t.Errorf("flow show after:\n%s", out)
	}
}

// A worker started before its server (compose, systemd) waits for it,
// saying so, and then takes visits; on the code before it exited at once.
func TestTemporalWorkerWaitsForItsServer(t *testing.T) {
	srv := devserver.Reserve(t)
	bin := flowBinary(t)
	dir := chainFlow(t)
	_, out := startFlowWorker(t, bin, dir, srv.Address, "chain", []string{"FLOW_TEMPORAL_CONNECT_WAIT=2m"})
	waitFor(t, 30*time.Second, "the worker saying it waits for the server", func() bool { return strings.Contains(out.String(), "does not answer yet") })
	time.Sleep(2 * time.Second) // a few tries more: the run below needs the worker alive
	srv.Start(t)
	runsDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	run := exec.CommandContext(ctx, bin, "run", "--temporal", srv.Address, "--task-queue", "chain", "chain.yaml")
	run.Dir, run.Env = dir, temporalEnv(runsDir)
	if b, err := run.CombinedOutput(); err != nil {
		t.Fatalf("flow run on the worker that waited for its server: %v\n%s", err, b)
	}
	if !strings.Contains(out.String(), "takes visits from task queue chain") {
		t.Errorf("the worker's output:\n%s", out.String())
	}
}

// flow serve --temporal, like a worker, may start before its server: it
// waits for it, saying so, and then serves; on the code before it exited
// 2 at once.
func TestServeWaitsForItsTemporal(t *testing.T) {
	srv := devserver.Reserve(t)
	bin, dir := flowBinary(t), t.TempDir()
	writeFlows(t, dir, map[string]string{"hello.yaml": "name: hello\nnodes:\n  - {id: a, run: echo hi}\n"})
	s := &served{t: t, stderr: &syncBuffer{}, exited: make(chan error, 1)}
	s.cmd = exec.Command(bin, "serve", "flows", "--addr", "127.0.0.1:0", "--temporal", srv.Address)
	s.cmd.Dir, s.cmd.Env, s.cmd.Stderr = dir, append(os.Environ(), "FLOW_TEMPORAL_CONNECT_WAIT=2m"), s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.exited <- s.cmd.Wait() }()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		if err := <-s.exited; err != nil {
			t.Logf("flow serve: %v", err) // killed, as it should be
		}
	})
	waitFor(t, 30*time.Second, "serve saying it waits for Temporal", func() bool {
		select {
		case err := <-s.exited:
			s.exited <- err // for the cleanup
			t.Fatalf("flow serve exited (%v) rather than waiting:\n%s", err, s.stderr.String())
		default:
		}
		return strings.Contains(s.stderr.String(), "does not answer yet")
	})
	srv.Start(t)
	waitFor(t, 60*time.Second, "serve serving once Temporal answers", func() bool {
		m := servingRE.FindStringSubmatch(s.stderr.String())
		if m != nil {
			s.url = m[1]
		}
		return m != nil
	})
	if code, got := s.call("GET", "/api/flows", ""); code != http.StatusOK {
		t.Fatalf("GET /api/flows: %d %v\n%s", code, got, s.stderr.String())
	}
}
