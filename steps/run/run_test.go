package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/proc"
)

// command returns a Command with a fresh home and a progress recorder.
func command(t *testing.T, argv []string, script string) (*engine.Command, *[]engine.Progress) {
	t.Helper()
	var (
		mu  sync.Mutex
		got []engine.Progress
	)
	runID := fmt.Sprintf("test-%d-%s", os.Getpid(), strings.ReplaceAll(t.Name(), "/", "_"))
	// A test that fails half-way must not leave its processes behind.
	t.Cleanup(func() { _, _ = proc.KillTagged(runID, 100*time.Millisecond) })
	return &engine.Command{
		RunID:  runID,
		Visit:  "checks/" + t.Name(),
		Argv:   argv,
		Script: script,
		Home:   t.TempDir(),
		Progress: func(p engine.Progress) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, p)
		},
	}, &got
}

func TestRun(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		argv   []string
		script string
		env    []string
		want   engine.CommandResult
	}{
		{name: "argv true", argv: []string{"true"}, want: engine.CommandResult{Passed: true}},
		{name: "argv false", argv: []string{"false"}, want: engine.CommandResult{Exit: 1}},
		{name: "argv is not a shell", argv: []string{"echo", "$HOME", "a|b"}, want: engine.CommandResult{Passed: true, Report: "$HOME a|b\n"}},
		{name: "script exit", script: "echo out; exit 3", want: engine.CommandResult{Exit: 3, Report: "out\n"}},
		{name: "script is bash", script: `[[ -n "$BASH_VERSION" ]] && echo bash`, want: engine.CommandResult{Passed: true, Report: "bash\n"}},
		{
			name:   "interleaved in order written",
			script: "echo 1; echo 2 >&2; echo 3; echo 4 >&2",
			want:   engine.CommandResult{Passed: true, Report: "1\n2\n3\n4\n"},
		},
		{name: "killed by signal", script: "echo x; kill -KILL $$", want: engine.CommandResult{Exit: 137, Report: "x\n"}},
		{
			name:   "environment",
			script: `echo "$FLOW_RUN|$FLOW_VISIT|$A|${FLOW_PROC_TAG%%/*}"`,
			env:    []string{"A=from node"},
			want:   engine.CommandResult{Passed: true, Report: "RUN|VISIT|from node|RUN\n"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd, progress := command(t, tt.argv, tt.script)
			cmd.Env = tt.env
			got, err := New().Run(context.Background(), cmd)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			want := tt.want
			want.Report = strings.NewReplacer("RUN", cmd.RunID, "VISIT", cmd.Visit).Replace(want.Report)
			if *got != want {
				t.Errorf("Run = %+v, want %+v", *got, want)
			}
			// Short, quick output stays in memory: no file, no directory.
			if _, err := os.Stat(filepath.Join(cmd.Home, LogName)); err == nil {
				t.Errorf("output.log was written for %d bytes of quick output", len(want.Report))
			}
			if len(*progress) != 1 || !strings.HasPrefix((*progress)[0].Activity, "running ") {
				t.Errorf("progress = %+v, want one running activity", *progress)
			}
		})
	}
}

func TestRunDir(t *testing.T) {
	t.Parallel()
	cmd, _ := command(t, []string{"pwd"}, "")
	cmd.Dir = t.TempDir()
	got, err := New().Run(context.Background(), cmd)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got.Report != cmd.Dir+"\n" {
		t.Errorf("report = %q, want %q", got.Report, cmd.Dir+"\n")
	}
}

func TestReportTail(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string // prints the output
		want   func(full string) string
	}{
		{
			name:   "ascii",
			script: `head -c 10000 /dev/zero | tr '\0' a; printf END`,
			want:   func(full string) string { return full[len(full)-ReportBytes:] },
		},
		{
			// 4000 three-byte runes: the cut at byte 4000 falls inside one.
			name:   "cut inside a rune",
			script: `for i in $(seq 4000); do printf '€'; done`,
			want:   func(string) string { return strings.Repeat("€", (ReportBytes-2)/3) },
		},
		{
			name:   "short output untouched",
			script: `printf 'é'`,
			want:   func(full string) string { return full },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd, _ := command(t, nil, tt.script)
			got, err := New().Run(context.Background(), cmd)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			full, err := os.ReadFile(filepath.Join(cmd.Home, LogName))
			if err != nil {
				full = []byte(got.Report) // short output is not written out
			}
			if want := tt.want(string(full)); got.Report != want {
				t.Errorf("report: %d bytes %q…, want %d bytes %q…", len(got.Report), head(got.Report), len(want), head(want))
			}
			if len(got.Report) > ReportBytes || !utf8.ValidString(got.Report) {
				t.Errorf("report is %d bytes, valid UTF-8 %v", len(got.Report), utf8.ValidString(got.Report))
			}
		})
	}
}

func head(s string) string { return s[:min(len(s), 12)] }

func TestUnavailable(t *testing.T) {
	t.Parallel()
	notExec := filepath.Join(t.TempDir(), "script.sh")
	if err := os.WriteFile(notExec, []byte("#!/bin/sh\necho hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, argv := range [][]string{{"flow-no-such-program"}, {notExec}, {"/no/such/dir/prog"}} {
		cmd, _ := command(t, argv, "")
		got, err := New().Run(context.Background(), cmd)
		if !errors.Is(err, engine.ErrUnavailable) {
			t.Errorf("%v: Run = %+v, %v; want an error wrapping ErrUnavailable", argv, got, err)
		}
	}
}

func TestInvalidCommand(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		argv   []string
		script string
	}{{nil, ""}, {[]string{"true"}, "true"}} {
		cmd, _ := command(t, c.argv, c.script)
		if _, err := New().Run(context.Background(), cmd); err == nil || errors.Is(err, engine.ErrUnavailable) {
			t.Errorf("argv %v script %q: err = %v, want an invalid-command error", c.argv, c.script, err)
		}
	}
}

func TestCancel(t *testing.T) {
	t.Parallel()
	const grace = 300 * time.Millisecond
	// The log appears once the command has run for a second.
	cmd, _ := command(t, nil, `trap "" TERM; setsid sleep 60 & sleep 1.1; echo started; while :; do sleep 0.05; done`)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	cause := errors.New("budget exhausted")
	done := make(chan struct{})
	var (
		got *engine.CommandResult
		err error
	)
	start := time.Now()
	go func() {
		defer close(done)
		got, err = New().WithGrace(grace).Run(ctx, cmd)
	}()
	waitFor(t, filepath.Join(cmd.Home, LogName), "started")
	cancel(cause)
	<-done
	if took := time.Since(start); took > grace+2*time.Second+500*time.Millisecond {
		t.Errorf("Run took %v after cancel", took)
	}
	if !errors.Is(err, cause) || got != nil {
		t.Errorf("Run = %+v, %v; want nil, %v", got, err, cause)
	}
	if n, _ := proc.KillTagged(cmd.RunID, grace); n != 0 {
		t.Errorf("%d processes of the run outlived the cancellation", n)
	}
}

// TestBackgroundDaemon: a step that leaves a daemon holding its output ends
// at once, and the daemon lives until the run's KillTagged.
func TestBackgroundDaemon(t *testing.T) {
	t.Parallel()
	cmd, _ := command(t, nil, `sleep 60 & echo spawned`)
	start := time.Now()
	got, err := New().Run(context.Background(), cmd)
	if err != nil || !got.Passed {
		t.Fatalf("Run = %+v, %v", got, err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("Run took %v: it waited for the daemon", took)
	}
	n, err := proc.KillTagged(cmd.RunID, time.Second)
	if err != nil || n != 1 {
		t.Errorf("KillTagged = %d, %v; want 1 daemon", n, err)
	}
}

func waitFor(t *testing.T, file, text string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, _ := os.ReadFile(file); strings.Contains(string(b), text) {
			return
		}
	}
	t.Fatalf("%s never contained %q", file, text)
}
