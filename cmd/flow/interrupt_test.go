package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flow/rundir"
)

// flowBinary returns a path that runs this test binary as the flow command
// (testscript.Main dispatches on the program name).
func flowBinary(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "flow")
	if err := os.Symlink(self, bin); err != nil {
		t.Fatal(err)
	}
	return bin
}

// marked lists the live (non-zombie) processes whose command line contains
// marker.
func marked(marker string) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(marker)) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue
		}
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestInterruptEndsEveryProcess(t *testing.T) {
	dir := t.TempDir()
	// Unusual sleep lengths mark this test's processes.
	flow := `name: stop
nodes:
  - id: work
    parallel:
      a: [{id: detached, run: "setsid sleep 4242.1 & sleep 4242.2"}]
      b: [{id: first, run: [sleep, "4242.3"]}]
      c: [{id: second, run: [sleep, "4242.4"]}]
      d: [{id: third, run: [sleep, "4242.5"]}]
`
	if err := os.WriteFile(filepath.Join(dir, "stop.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(flowBinary(t), "run", "stop.yaml")
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()

	deadline := time.Now().Add(20 * time.Second)
	for len(marked("4242.")) < 5 {
		if time.Now().After(deadline) {
			t.Fatalf("the four commands and the grandchild did not start: %v\n%s", marked("4242."), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	interrupt(t, cmd, &stderr)
	if left := marked("4242."); len(left) > 0 {
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Fatalf("processes left after the run: %v", left)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("run directories: %v", runs)
	}
	facts, err := rundir.ReadJournal(runs[0])
	if err != nil {
		t.Fatal(err)
	}
	stopped := 0
	for _, f := range facts {
		if f.Type == "end" && f.Error != nil && f.Error.Kind == "stopped" {
			stopped++
		}
	}
	if stopped < 4 {
		b, _ := json.MarshalIndent(facts, "", " ")
		t.Fatalf("want the 4 commands journaled as stopped, got %d:\n%s", stopped, b)
	}
	if !strings.Contains(stderr.String(), "stopped") {
		t.Errorf("the summary does not say the run stopped:\n%s", stderr.String())
	}
	if want := "resume with `flow resume " + filepath.Base(runs[0]) + "`"; !strings.Contains(stderr.String(), want) {
		t.Errorf("the summary does not say %s:\n%s", want, stderr.String())
	}
}

// interrupt sends SIGINT to a running flow and holds it to exit code 130
// within 8 s; it returns how long the exit took.
func interrupt(t *testing.T, cmd *exec.Cmd, out *bytes.Buffer) time.Duration {
	t.Helper()
	start := time.Now()
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	took := time.Since(start)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Fatalf("flow run = %v, want exit 130\n%s", err, out.String())
	}
	if took > 8*time.Second {
		t.Fatalf("took %v to exit after Ctrl-C, want at most 8 s", took)
	}
	return took
}

// TestRunEndsDaemons: a run that ends on its own ends the daemons its steps
// left, before flow exits, also when a visit came after the daemon's.
func TestRunEndsDaemons(t *testing.T) {
	dir := t.TempDir()
	// Unusual sleep lengths mark this test's processes.
	flow := `name: daemon
nodes:
  - {id: start, run: "setsid sleep 4343.1 >/dev/null 2>&1 & true"}
  - {id: after, run: "sleep 0.1"}
`
	if err := os.WriteFile(filepath.Join(dir, "daemon.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(flowBinary(t), "run", "daemon.yaml")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flow run: %v\n%s", err, out)
	}
	if left := marked("4343."); len(left) > 0 {
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Fatalf("daemons left after the run: %v", left)
	}
}
