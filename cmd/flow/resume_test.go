package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/rundir"
)

// startKilled starts `flow run file` in dir and SIGKILLs the engine once
// ready() holds, as a crash or an OOM kill would. It returns the run dir.
func startKilled(t *testing.T, bin, dir, file string, ready func(run string) bool) string {
	t.Helper()
	cmd := exec.Command(bin, "run", file)
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
		if len(runs) == 1 && ready(runs[0]) {
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			journalIsJSONL(t, runs[0])
			return runs[0]
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatal("the run never reached the point to kill it")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// journalIsJSONL holds a killed engine's journal to docs/run-directory.md: every line
// but a torn last one is a JSON value, and there is no NUL byte.
func journalIsJSONL(t *testing.T, run string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(run, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if bytes.IndexByte(b, 0) >= 0 {
		t.Fatal("the journal holds a NUL byte")
	}
	lines := bytes.Split(b, []byte("\n"))
	for i, l := range lines[:len(lines)-1] {
		if !json.Valid(l) {
			t.Fatalf("journal line %d is not JSON: %q", i+1, l)
		}
	}
}

// waitStarted waits for the one run in dir to journal the start of visit,
// and returns the run directory.
func waitStarted(t *testing.T, dir, visit string) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
		if len(runs) == 1 && journalHas(runs[0], "start", visit) {
			return runs[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("visit %s did not start", visit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func journalHas(run, fact, visit string) bool {
	facts, _ := rundir.ReadJournal(run)
	for _, f := range facts {
		if string(f.Type) == fact && f.Visit == visit {
			return true
		}
	}
	return false
}

func resume(t *testing.T, bin, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"resume"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flow resume: %v\n%s", err, out)
	}
	return string(out)
}

func count(t *testing.T, path string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, l := range strings.Fields(string(b)) {
		out[l]++
	}
	return out
}

func TestResumeAfterKillRunsNothingTwice(t *testing.T) {
	dir := t.TempDir()
	flow := "name: chain\nnodes:\n"
	for i := 1; i <= 5; i++ {
		pause := ""
		if i == 3 {
			pause = "sleep 2; "
		}
		flow += fmt.Sprintf("  - {id: s%d, run: \"echo s%d >> ran; %secho done %d\"}\n", i, i, pause, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "chain.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := flowBinary(t)
	run := startKilled(t, bin, dir, "chain.yaml", func(run string) bool { return journalHas(run, "start", "s3") })
	// The engine died mid-write: a torn last line must not stop the resume.
	f, err := os.OpenFile(filepath.Join(run, "journal.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"type":"end","vis`)
	_ = f.Close()

	// flow show brings the dead engine's report up to date with the journal.
	show := exec.Command(bin, "show", filepath.Base(run))
	show.Dir = dir
	if out, err := show.CombinedOutput(); err != nil || !strings.Contains(string(out), "interrupted") {
		t.Fatalf("flow show: %v\n%s", err, out)
	}
	if page, err := os.ReadFile(filepath.Join(run, "report.html")); err != nil || !strings.Contains(string(page), `data-visit="s2" data-status="ok"`) {
		t.Fatalf("report.html after show: %v", err)
	}

	out := resume(t, bin, dir)
	if !strings.Contains(out, "succeeded") {
		t.Fatalf("resume did not succeed:\n%s", out)
	}
	ran := count(t, filepath.Join(dir, "ran"))
	for _, s := range []string{"s1", "s2", "s4", "s5"} {
		if ran[s] != 1 {
			t.Errorf("%s ran %d times, want exactly once (all runs: %v)", s, ran[s], ran)
		}
	}
	info, err := rundir.Inspect(run)
	if err != nil || info.Status != "succeeded" {
		t.Fatalf("after resume: %+v %v", info, err)
	}
	// A succeeded run is not resumable, with a reason.
	cmd := exec.Command(bin, "resume", filepath.Base(run))
	cmd.Dir = dir
	msg, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(msg), "nothing left to run") {
		t.Fatalf("resuming a finished run: %v\n%s", err, msg)
	}
}

func TestResumeMapKilledHalfWay(t *testing.T) {
	dir := t.TempDir()
	flow := `name: fan
nodes:
  - id: each
    map: "1..12"
    max: 12
    concurrency: 3
    do:
      - {id: work, run: "echo item${{ item }} >> ran; sleep 0.4"}
`
	if err := os.WriteFile(filepath.Join(dir, "fan.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := flowBinary(t)
	var endedBefore []string
	run := startKilled(t, bin, dir, "fan.yaml", func(run string) bool {
		facts, _ := rundir.ReadJournal(run)
		endedBefore = endedBefore[:0]
		for _, f := range facts {
			if f.Type == "end" && strings.HasPrefix(f.Visit, "each[") {
				endedBefore = append(endedBefore, f.Visit)
			}
		}
		return len(endedBefore) >= 6
	})
	out := resume(t, bin, dir, filepath.Base(run))
	if !strings.Contains(out, "succeeded") {
		t.Fatalf("resume did not succeed:\n%s", out)
	}
	ran := count(t, filepath.Join(dir, "ran"))
	for _, v := range endedBefore {
		var i int
		if _, err := fmt.Sscanf(v, "each[%d]/work", &i); err != nil {
			t.Fatal(err)
		}
		if n := ran[fmt.Sprintf("item%d", i)]; n != 1 {
			t.Errorf("%s had ended before the kill but ran %d times", v, n)
		}
	}
	for i := 1; i <= 12; i++ {
		if ran[fmt.Sprintf("item%d", i)] == 0 {
			t.Errorf("item %d never ran", i)
		}
	}
}

func TestResumeRefusesALiveRun(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "slow.yaml"), []byte("name: slow\nnodes:\n  - {id: s, run: [sleep, \"5\"]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := flowBinary(t)
	cmd := exec.Command(bin, "run", "slow.yaml")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	run := waitStarted(t, dir, "s")
	r := exec.Command(bin, "resume", filepath.Base(run))
	r.Dir = dir
	out, err := r.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "running") {
		t.Fatalf("resuming a live run must be refused: %v\n%s", err, out)
	}
}
