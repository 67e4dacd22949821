package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

const testGrace = 500 * time.Millisecond

// testRun returns a run id no other test (or test binary) shares.
func testRun(t *testing.T) string {
	return fmt.Sprintf("test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_"))
}

// alive reports whether pid is a live process: absent or zombie is dead.
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name in parentheses.
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// waitPID waits for a pid file written by a descendant.
func waitPID(t *testing.T, file string) int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(file)
		if err == nil && bytes.HasSuffix(b, []byte("\n")) {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatalf("reading pid file: %v", err)
			}
			return pid
		}
	}
	t.Fatalf("no pid in %s", file)
	return 0
}

// waitGone waits briefly for pid to die: a SIGKILLed process may take a few
// milliseconds to leave.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = killPID(pid)
			t.Fatalf("process %d is still alive", pid)
		}
	}
}

func killPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

func TestCancelEndsTree(t *testing.T) {
	tests := []struct {
		name string
		// script starts a descendant that writes its pid to $1.
		script string
		// full says whether the escalation must wait the whole grace period.
		full bool
	}{
		{
			name:   "detached grandchild",
			script: `setsid sh -c 'echo $$ > "$1"; exec sleep 60' _ "$1" & wait`,
		},
		{
			name:   "grandchild ignoring SIGTERM",
			script: `setsid sh -c 'trap "" TERM; echo $$ > "$1"; while :; do sleep 0.05; done' _ "$1" & wait`,
			full:   true,
		},
		{
			name:   "child ignoring SIGTERM",
			script: `trap "" TERM; echo $$ > "$1"; while :; do sleep 0.05; done`,
			full:   true,
		},
		{
			name:   "orphan of an exited parent",
			script: `(sh -c 'echo $$ > "$1"; exec sleep 60' _ "$1" &) ; sleep 60`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pidFile := filepath.Join(t.TempDir(), "pid")
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			cmd := Command(ctx, testRun(t), "sh", "-c", tt.script, "sh", pidFile)
			cmd.Grace = testGrace
			if err := cmd.Start(); err != nil {
				t.Fatalf("starting: %v", err)
			}
			pid := waitPID(t, pidFile)
			if !alive(pid) {
				t.Fatalf("descendant %d is not running", pid)
			}
			cause := errors.New("stop")
			start := time.Now()
			cancel(cause)
			err := cmd.Wait()
			took := time.Since(start)
			if err == nil {
				t.Errorf("Wait returned nil after cancellation")
			}
			if !cmd.Cancelled() {
				t.Errorf("Cancelled() = false")
			}
			if took > testGrace+time.Second {
				t.Errorf("Wait took %v, want at most grace+1s", took)
			}
			if tt.full && took < testGrace-50*time.Millisecond {
				t.Errorf("Wait took %v, want the grace period (%v) before SIGKILL", took, testGrace)
			}
			waitGone(t, pid)
		})
	}
}

func TestNormalExitLeavesDaemonForKillTagged(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	run := testRun(t)
	start := func(runID, name string) int {
		pidFile := filepath.Join(dir, name)
		cmd := Command(context.Background(), runID, "sh", "-c",
			`setsid sh -c 'echo $$ > "$1"; exec sleep 60' _ "$1" &`, "sh", pidFile)
		cmd.Grace = testGrace
		if err := cmd.Run(); err != nil {
			t.Fatalf("running: %v", err)
		}
		return waitPID(t, pidFile)
	}
	mine := start(run, "mine")
	// A run whose id extends ours must not be reached.
	other := start(run+"0", "other")
	defer func() { _ = killPID(other) }()

	if !alive(mine) {
		t.Fatalf("daemon %d died with its step; it should live until KillTagged", mine)
	}
	n, err := KillTagged(run, testGrace)
	if err != nil {
		t.Fatalf("KillTagged: %v", err)
	}
	if n != 1 {
		t.Errorf("KillTagged signalled %d processes, want 1", n)
	}
	waitGone(t, mine)
	if !alive(other) {
		t.Errorf("KillTagged(%q) killed a process of run %q", run, run+"0")
	}
	if n, err := KillTagged(run, testGrace); err != nil || n != 0 {
		t.Errorf("second KillTagged = %d, %v; want 0, nil", n, err)
	}
	if _, err := KillTagged("", testGrace); err == nil {
		t.Errorf("KillTagged with an empty run id succeeded")
	}
}

func TestEnvironment(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  []string
		want func(tag string) []string // lines of the child's env to find
	}{
		{
			name: "inherits and tags",
			env:  []string{"A=1"},
			want: func(tag string) []string { return []string{"A=1", TagEnv + "=" + tag} },
		},
		{
			name: "nested run keeps the outer tag",
			env:  []string{TagEnv + "=outer/1.1"},
			want: func(tag string) []string { return []string{TagEnv + "=outer/1.1 " + tag} },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var out bytes.Buffer
			cmd := Command(context.Background(), "r un/x", "env")
			cmd.Cmd.Env = tt.env
			cmd.Cmd.Stdout = &out
			if err := cmd.Run(); err != nil {
				t.Fatalf("running env: %v", err)
			}
			if !strings.HasPrefix(cmd.Tag(), "r_un_x/") {
				t.Errorf("tag %q does not start with the cleaned run id", cmd.Tag())
			}
			lines := strings.Split(out.String(), "\n")
			for _, w := range tt.want(cmd.Tag()) {
				if !contains(lines, w) {
					t.Errorf("child env lacks %q:\n%s", w, out.String())
				}
			}
			if n := strings.Count(out.String(), TagEnv+"="); n != 1 {
				t.Errorf("child env has %d %s entries, want 1", n, TagEnv)
			}
		})
	}
}

func contains(lines []string, s string) bool {
	for _, l := range lines {
		if l == s {
			return true
		}
	}
	return false
}

func TestStdinIsDevNull(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	cmd := Command(context.Background(), testRun(t), "sh", "-c", "cat; echo done")
	cmd.Cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("running: %v", err)
	}
	if out.String() != "done\n" {
		t.Errorf("output = %q, want %q", out.String(), "done\n")
	}
}

func TestOwnProcessGroup(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	cmd := Command(context.Background(), testRun(t), "sh", "-c", `echo $$; ps -o pgid= -p $$ 2>/dev/null || cut -d' ' -f5 /proc/$$/stat`)
	cmd.Cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("running: %v", err)
	}
	f := strings.Fields(out.String())
	if len(f) != 2 || f[0] != f[1] {
		t.Errorf("pid and pgid = %q, want equal", f)
	}
}

func TestExitStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"kill -KILL $$", 137},
		{"kill -TERM $$", 143},
	}
	for _, tt := range tests {
		err := Command(context.Background(), testRun(t), "sh", "-c", tt.script).Run()
		got, ok := ExitStatus(err)
		if !ok || got != tt.want {
			t.Errorf("%s: ExitStatus = %d, %v; want %d, true", tt.script, got, ok, tt.want)
		}
	}
	if _, ok := ExitStatus(errors.New("other")); ok {
		t.Errorf("ExitStatus of an unrelated error is ok")
	}
}

func TestStartFailsWhenCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Command(ctx, testRun(t), "true").Start(); !errors.Is(err, context.Canceled) {
		t.Errorf("Start = %v, want context.Canceled", err)
	}
}

func TestTagged(t *testing.T) {
	t.Parallel()
	env := []byte("A=1\x00" + TagEnv + "=outer/9.1 run/5.7\x00B=2\x00")
	tests := []struct {
		name  string
		match matcher
		want  bool
	}{
		{"exact", exactTag("run/5.7"), true},
		{"exact outer", exactTag("outer/9.1"), true},
		{"exact other", exactTag("run/5.70"), false},
		{"run", runTags("run"), true},
		{"run prefix of another", runTags("ru"), false},
		{"no tag", runTags("A=1"), false},
	}
	for _, tt := range tests {
		if got := tagged(env, tt.match); got != tt.want {
			t.Errorf("%s: tagged = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestNoGoroutineLeft: after Wait returns, nothing this package or os/exec
// started for the command is still running. Not parallel: it counts.
func TestNoGoroutineLeft(t *testing.T) {
	before := runtime.NumGoroutine()
	for _, cancelIt := range []bool{false, true} {
		ctx, cancel := context.WithCancel(context.Background())
		var out bytes.Buffer
		cmd := Command(ctx, testRun(t), "sh", "-c", "echo hi; sleep 0.2")
		cmd.Grace = testGrace
		cmd.Cmd.Stdin = strings.NewReader("input")
		cmd.Cmd.Stdout = &out
		cmd.Cmd.Stderr = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if cancelIt {
			cancel()
		}
		_ = cmd.Wait()
		cancel()
	}
	var after int
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if after = runtime.NumGoroutine(); after <= before {
			return
		}
	}
	t.Errorf("%d goroutines before, %d after", before, after)
}

// BenchmarkKillTaggedNone is the cost of the end-of-run cleanup when no
// process is left: one scan of /proc.
func BenchmarkKillTaggedNone(b *testing.B) {
	for b.Loop() {
		if _, err := KillTagged("bench-none", time.Second); err != nil {
			b.Fatal(err)
		}
	}
}
