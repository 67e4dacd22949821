package proc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// startPiped starts script with stdout and stderr on a new pipe and returns
// the command and the pipe's read end; the test's cleanup ends what the
// script left running.
func startPiped(t *testing.T, script string) (*Cmd, *os.File) {
	t.Helper()
	run := testRun(t)
	t.Cleanup(func() { _, _ = KillTagged(run, 100*time.Millisecond) })
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	c := Command(context.Background(), run, "sh", "-c", script)
	c.Cmd.Stdout, c.Cmd.Stderr = w, w
	err = c.Start()
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return c, r
}

// lateWriter holds its first Write until release is closed: a copying
// goroutine that runs late on a busy machine.
type lateWriter struct {
	release chan struct{}
	mu      sync.Mutex
	buf     bytes.Buffer
	once    sync.Once
}

func (w *lateWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { <-w.release })
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *lateWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestFinishTakesWhatTheChildWrote: the copying goroutine is held past
// Finish's bound while the child writes more than one read's worth and
// exits; the bound passes, and still all the child wrote is copied and the
// end of the output seen. (Stopping at a read deadline alone loses all but
// "first": a Read that starts after its deadline fails without looking at
// the pipe.)
func TestFinishTakesWhatTheChildWrote(t *testing.T) {
	t.Parallel()
	// 60,000 bytes: less than the pipe holds, so the child never blocks.
	c, r := startPiped(t, `printf first; sleep 0.2; head -c 60000 /dev/zero | tr '\0' z`)
	out := &lateWriter{release: make(chan struct{})}
	copier := StartCopy(r, out)
	if err := c.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	time.AfterFunc(100*time.Millisecond, func() { close(out.release) })
	if !copier.Finish(time.Now()) {
		t.Errorf("Finish = false, want true: nothing held the pipe open")
	}
	want := "first" + strings.Repeat("z", 60000)
	if got := out.String(); got != want {
		t.Errorf("copied %d bytes %.20q…, want %d bytes %.20q…", len(got), got, len(want), want)
	}
}

// TestFinishLateReaderAfterExit: the child wrote the rest and exited while
// the goroutine was held; Finish's bound passes before it runs again.
func TestFinishLateReaderAfterExit(t *testing.T) {
	t.Parallel()
	c, r := startPiped(t, `printf 'first, '; sleep 0.2; printf 'all of it'; printf ' and stderr' >&2`)
	out := &lateWriter{release: make(chan struct{})}
	copier := StartCopy(r, out)
	if err := c.Wait(); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	// The goroutine is held in its first Write: release it only after the
	// bound has passed.
	time.AfterFunc(100*time.Millisecond, func() { close(out.release) })
	copier.Finish(time.Now())
	if got := out.String(); got != "first, all of it and stderr" {
		t.Errorf("copied %q, want %q", got, "first, all of it and stderr")
	}
}

// TestFinishHeldOpen: a daemon that keeps the pipe open, silent or
// writing without pause, holds Finish only for its bound; what the
// command wrote before it exited is there.
func TestFinishHeldOpen(t *testing.T) {
	t.Parallel()
	for name, daemon := range map[string]string{"silent": "sleep 30", "writing": "yes daemon"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, r := startPiped(t, "printf 'before exit\\n'; "+daemon+" &")
			var out bytes.Buffer
			copier := StartCopy(r, &out)
			if err := c.Wait(); err != nil {
				t.Fatalf("Wait: %v", err)
			}
			start := time.Now()
			if copier.Finish(start.Add(100 * time.Millisecond)) {
				t.Errorf("Finish = true, want false: the daemon holds the pipe")
			}
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("Finish took %v", took)
			}
			if !strings.HasPrefix(out.String(), "before exit\n") {
				t.Errorf("copied %.40q…, want it to start with the command's output", out.String())
			}
		})
	}
}

// errWriter fails every Write.
type errWriter struct{}

func (errWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestCopyWriteErrorDoesNotBlockTheChild: after the writer fails, output
// is read and discarded, so a child writing more than a pipe holds exits.
func TestCopyWriteErrorDoesNotBlockTheChild(t *testing.T) {
	t.Parallel()
	c, r := startPiped(t, `head -c 1000000 /dev/zero`)
	copier := StartCopy(r, errWriter{})
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Wait: %v", err)
		}
	case <-time.After(10 * time.Second):
		c.Stop(errors.New("blocked"))
		<-done //nolint:errcheck // waits for the goroutine to end; its error is not this check
		t.Fatal("the child blocked on a pipe nobody read")
	}
	if !copier.Finish(time.Now().Add(time.Second)) {
		t.Error("Finish = false, want true")
	}
	if copier.Err() == nil {
		t.Error("Err = nil, want the writer's error")
	}
}

// TestRunOutputStderrHeldOpen: a descendant that keeps stderr open (not
// stdout) holds the turn only for the grace, and the program's stderr is
// whole.
func TestRunOutputStderrHeldOpen(t *testing.T) {
	t.Parallel()
	run := testRun(t)
	t.Cleanup(func() { _, _ = KillTagged(run, 100*time.Millisecond) })
	c := Command(context.Background(), run, "sh", "-c", `echo answer; echo 'said on stderr' >&2; sleep 30 >/dev/null &`)
	c.Grace = 200 * time.Millisecond
	var stdout, stderr bytes.Buffer
	c.Cmd.Stderr = &stderr
	start := time.Now()
	end, err := c.RunOutput(&stdout, 0, nil)
	if err != nil || end.Err != nil {
		t.Fatalf("RunOutput = %+v, %v", end, err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("RunOutput took %v", took)
	}
	if !end.HeldOpen || end.Lingered {
		t.Errorf("RunOutput = %+v, want HeldOpen", end)
	}
	if stdout.String() != "answer\n" || stderr.String() != "said on stderr\n" {
		t.Errorf("stdout %q, stderr %q", stdout.String(), stderr.String())
	}
}
