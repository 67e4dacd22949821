package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTailShowsARunningVisitsOutput(t *testing.T) {
	dir := t.TempDir()
	flow := `name: talk
agents:
  - {name: talker, description: talks slowly, driver: exec, command: [sh, -c, "cat >/dev/null; echo thinking about it; sleep 30; echo done"]}
nodes:
  - {id: say, agent: talker, prompt: hi}
`
	if err := os.WriteFile(filepath.Join(dir, "talk.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := flowBinary(t)
	run := exec.Command(bin, "run", "talk.yaml")
	run.Dir = dir
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = run.Process.Signal(os.Interrupt); _ = run.Wait() }()

	runDir := waitStarted(t, dir, "say")
	started := time.Now()
	for {
		tail := exec.Command(bin, "tail", filepath.Base(runDir), "say")
		tail.Dir = dir
		out, _ := tail.CombinedOutput()
		if strings.Contains(string(out), "thinking about it") {
			break
		}
		if time.Since(started) > time.Second {
			t.Fatalf("flow tail did not show the agent's line within 1 s; last output:\n%s", out)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// A cursor is refused with the reason.
	c := exec.Command(bin, "tail", filepath.Base(runDir), "say", "--cursor", "12")
	c.Dir = dir
	out, err := c.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no cursor") {
		t.Fatalf("a cursor must be refused: %v\n%s", err, out)
	}

	// A deleted transcript is an error, never an empty answer.
	if err := os.RemoveAll(filepath.Join(runDir, "home", "say")); err != nil {
		t.Fatal(err)
	}
	gone := exec.Command(bin, "tail", filepath.Base(runDir), "say")
	gone.Dir = dir
	out, err = gone.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(string(out), "no readable transcript") {
		t.Fatalf("tail of a deleted transcript: %v\n%s", err, out)
	}
}
