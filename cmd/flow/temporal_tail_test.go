package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/internal/devserver"
)

func TestTemporalTailOfARunningVisit(t *testing.T) {
	srv := devserver.Start(t)
	bin := flowBinary(t)
	dir := t.TempDir()
	// A command's output goes to its home's output.log once it has run a
	// second (steps/run), where flow tail finds it.
	flow := "name: slow\nnodes:\n  - {id: slow, run: 'for i in $(seq 16); do echo line $i; sleep 0.5; done; echo done'}\n"
	if err := os.WriteFile(filepath.Join(dir, "slow.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	startWorker(t, bin, dir, srv.Address, "tail")
	runsDir := t.TempDir()
	run := exec.Command(bin, "run", "--temporal", srv.Address, "--task-queue", "tail", "slow.yaml")
	run.Dir, run.Env = dir, temporalEnv(runsDir)
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = run.Wait() }()
	// While the visit runs on the worker, flow tail reads its output
	// there (the worker shares this machine).
	deadline := time.Now().Add(30 * time.Second)
	var out []byte
	for {
		runs, _ := filepath.Glob(filepath.Join(runsDir, "*"))
		if len(runs) == 1 {
			tail := exec.Command(bin, "tail", filepath.Base(runs[0]), "slow")
			tail.Dir, tail.Env = dir, temporalEnv(runsDir)
			out, _ = tail.CombinedOutput()
			if strings.Contains(string(out), "line 3") {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("flow tail of the running visit never showed its output; last:\n%s", out)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if strings.Contains(string(out), "done") {
		t.Errorf("the visit had ended when flow tail read it: %s", out)
	}
}
