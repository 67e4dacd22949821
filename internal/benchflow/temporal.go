package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/flowrun/flow/internal/devserver"
)

// targetTemporalVisit bounds what a sequential visit costs on Temporal over
// the same visit in a local run (docs/performance.md).
const targetTemporalVisit = 50 * time.Millisecond

// temporalCLI finds the Temporal CLI: on PATH, else in the module's
// .tools/bin, where `go -C tools tool task deps` installs it; "" if neither.
func temporalCLI(root string) string {
	if p, err := exec.LookPath("temporal"); err == nil {
		return p
	}
	p := filepath.Join(root, ".tools", "bin", "temporal")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	return ""
}

// temporalBench is a Temporal dev server and one `flow worker` on it, for
// the workload that times a chain on Temporal against the same chain run
// locally. stop ends both.
type temporalBench struct {
	addr    string
	procs   []*exec.Cmd
	stopped bool
}

// startTemporal starts the dev server (with the settings docs/temporal.md
// recommends unless plain) and a worker in tmp, and waits until the
// worker polls.
func startTemporal(ctx context.Context, cli, flowBin, tmp string, env []string, plain bool, log io.Writer) (*temporalBench, error) {
	ports, err := freePorts(4)
	if err != nil {
		return nil, err
	}
	tb := &temporalBench{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	args := []string{"server", "start-dev", "--headless", "--ip", "127.0.0.1", "--port", strconv.Itoa(ports[0]),
		"--ui-port", strconv.Itoa(ports[1]), "--http-port", strconv.Itoa(ports[2]), "--metrics-port", strconv.Itoa(ports[3]), "--log-level", "error"}
	if !plain {
		args = append(args, devserver.Flags()...)
	}
	if err := tb.start(tmp, "server.log", nil, cli, args...); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", tb.addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			break
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			tb.stop()
			return nil, fmt.Errorf("the Temporal dev server did not listen on %s within a minute (see %s)", tb.addr, filepath.Join(tmp, "server.log"))
		}
		time.Sleep(100 * time.Millisecond)
	}
	wdir := filepath.Join(tmp, "worker")
	if err := os.MkdirAll(wdir, 0o755); err != nil {
		tb.stop()
		return nil, err
	}
	if err := tb.start(wdir, "worker.log", env, flowBin, "worker", "--temporal", tb.addr, "--runs-dir", filepath.Join(wdir, "runs")); err != nil {
		tb.stop()
		return nil, err
	}
	fmt.Fprintf(log, "Temporal dev server on %s (%s), one flow worker\n", tb.addr, map[bool]string{true: "its default settings", false: "docs/temporal.md's settings"}[plain])
	return tb, nil
}

// start starts a process of the bench in dir, its output to dir/logName.
func (tb *temporalBench) start(dir, logName string, env []string, argv0 string, args ...string) error {
	out, err := os.Create(filepath.Join(dir, logName))
	if err != nil {
		return err
	}
	defer func() { _ = out.Close() }() // the child holds its own descriptor
	cmd := exec.Command(argv0, args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = dir, env, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", filepath.Base(argv0), err)
	}
	tb.procs = append(tb.procs, cmd)
	return nil
}

// stop ends the worker, then the server (each process group: SIGTERM, then
// SIGKILL after five seconds), and reaps them.
func (tb *temporalBench) stop() {
	if tb.stopped {
		return
	}
	tb.stopped = true
	for i := len(tb.procs) - 1; i >= 0; i-- {
		cmd := tb.procs[i]
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	}
}

// freePorts finds n ports free on 127.0.0.1 now.
func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var out []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, errors.Join(errors.New("finding a free port"), err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out, nil
}
