package proc

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

// EndRun ends what a run's steps left — a daemon in the step's process
// group, one that left its group and session (setsid), the child of a
// daemon — without a /proc scan, in a subreaper; and not a process of
// another run.
func TestEndRunEndsLeftoversWithoutScan(t *testing.T) {
	if !Subreap() {
		t.Skip("this kernel refuses PR_SET_CHILD_SUBREAPER")
	}
	if _, ok := children(1); !ok {
		t.Skip("this kernel does not list a process's children")
	}
	dir := t.TempDir()
	run := testRun(t)
	start := func(runID, name, script string) int {
		pidFile := filepath.Join(dir, name)
		cmd := Command(context.Background(), runID, "sh", "-c", script, "sh", pidFile)
		cmd.Grace = testGrace
		if err := cmd.Run(); err != nil {
			t.Fatalf("running: %v", err)
		}
		return waitPID(t, pidFile)
	}
	grouped := start(run, "grouped", `sh -c 'echo $$ > "$1"; exec sleep 60' _ "$1" &`)
	detached := start(run, "detached", `setsid sh -c 'echo $$ > "$1"; exec sleep 60' _ "$1" &`)
	grandchild := start(run, "grandchild", `setsid sh -c 'sh -c "echo \$\$ > \"\$1\"; exec sleep 60" _ "$1" & wait' _ "$1" &`)
	other := start(run+"0", "other", `setsid sh -c 'echo $$ > "$1"; exec sleep 60' _ "$1" &`)
	defer func() { _ = killPID(other) }()
	for _, pid := range []int{grouped, detached, grandchild} {
		if !alive(pid) {
			t.Fatalf("daemon %d died with its step", pid)
		}
	}
	before := scanned.Load()
	n, err := EndRun(run, testGrace)
	if err != nil || n < 3 {
		t.Errorf("EndRun = %d, %v; want at least the 3 daemons", n, err)
	}
	if s := scanned.Load() - before; s != 0 {
		t.Errorf("EndRun scanned /proc %d times, want none", s)
	}
	for _, pid := range []int{grouped, detached, grandchild} {
		waitGone(t, pid)
	}
	if !alive(other) {
		t.Errorf("EndRun(%q) killed a process of run %q", run, run+"0")
	}
	if n, err := EndRun(run, testGrace); err != nil || n != 0 {
		t.Errorf("second EndRun = %d, %v; want 0, nil", n, err)
	}
	if _, err := EndRun("", testGrace); err == nil {
		t.Errorf("EndRun with an empty run id succeeded")
	}
}

// A step that leaves nothing costs EndRun no scan and no signal.
func TestEndRunAfterCleanStepsSignalsNothing(t *testing.T) {
	if !Subreap() {
		t.Skip("this kernel refuses PR_SET_CHILD_SUBREAPER")
	}
	run := testRun(t)
	for range 5 {
		if err := Command(context.Background(), run, "true").Run(); err != nil {
			t.Fatal(err)
		}
	}
	groups.Lock()
	kept := len(groups.byRun[run])
	groups.Unlock()
	before := scanned.Load()
	if n, err := EndRun(run, testGrace); err != nil || n != 0 || kept != 0 || scanned.Load() != before {
		t.Errorf("EndRun = %d, %v with %d groups kept and %d scans; want nothing", n, err, kept, scanned.Load()-before)
	}
}

// BenchmarkEndRunNone is the cost of the end-of-run cleanup when no step
// left anything, in a subreaper: next to BenchmarkKillTaggedNone, the
// /proc scan it replaces.
func BenchmarkEndRunNone(b *testing.B) {
	if !Subreap() {
		b.Skip("this kernel refuses PR_SET_CHILD_SUBREAPER")
	}
	for b.Loop() {
		if _, err := EndRun("bench-none", time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
