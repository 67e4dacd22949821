// Package devserver starts a Temporal development server for tests: the
// Temporal CLI's `temporal server start-dev`, in memory, on 127.0.0.1 and
// ports of its own, ended when the test ends. The CLI is found by
// clitest.Tool (PATH, else .tools/bin where `go -C tools tool task deps` installs
// it); without it the test skips, or fails under CI=true.
//
// The server itself is never compiled into the module: go.temporal.io/
// server stays out of `go build ./...` (internal/archtest checks it).
package devserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/log"

	"github.com/flowrun/flow/internal/clitest"
)

// Settings are the dev server's dynamic configuration that docs/temporal.md
// recommends for flow (Per-visit latency): a visit's activity task goes to
// the worker that scheduled it with the workflow task's answer (eager
// activities), and the one history shard of a dev server hands tasks on
// as fast as they come, not 20 reads a second. Without them every visit
// waits about 100 ms for two dispatches.
var Settings = []string{
	"system.enableActivityEagerExecution=true",
	"history.transferProcessorMaxPollRPS=1000",
}

// Flags are Settings as `temporal server start-dev` flags.
func Flags() []string {
	var f []string
	for _, s := range Settings {
		f = append(f, "--dynamic-config-value", s)
	}
	return f
}

// Server is a running dev server.
type Server struct {
	// Address is the frontend's HOST:PORT, for clients and workers.
	Address string
	cmd     *exec.Cmd
	out     *lockedBuffer
	ports   []int
	exited  chan struct{} // closed when the server's process has ended
}

// Start starts a dev server and waits until it answers as Temporal. It is
// stopped when t ends.
//
// Its ports were free when they were picked, and are not held until the
// server binds them: another test's listener may take one meanwhile. A
// server that could not bind its ports ends at once; it is then started
// again on other ports.
func Start(t testing.TB) *Server {
	t.Helper()
	var s *Server
	for try := 1; ; try++ {
		s = Reserve(t)
		err := s.start(t)
		if err == nil {
			return s
		}
		if !errors.Is(err, errEnded) || try == 3 {
			t.Fatalf("%v:\n%s", err, s.out.String())
		}
		t.Logf("%v; starting it again on other ports:\n%s", err, s.out.String())
	}
}

// Reserve picks the ports of a dev server that is not started yet: its
// Address is known before it listens (a worker started before its
// server). Start starts it.
func Reserve(t testing.TB) *Server {
	t.Helper()
	ports := freePorts(t, 4)
	s := &Server{Address: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0])), out: &lockedBuffer{}, ports: ports}
	return s
}

// Start starts the server Reserve made and waits until it answers as
// Temporal. It is stopped when t ends.
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if err := s.start(t); err != nil {
		t.Fatalf("%v:\n%s", err, s.out.String())
	}
}

// errEnded is a server that ended before it answered.
var errEnded = errors.New("the Temporal dev server ended before it answered")

func (s *Server) start(t testing.TB) error {
	t.Helper()
	bin := clitest.Tool(t, "temporal")
	ports := s.ports
	args := []string{"server", "start-dev", "--headless", "--ip", "127.0.0.1",
		"--port", strconv.Itoa(ports[0]), "--ui-port", strconv.Itoa(ports[1]),
		"--http-port", strconv.Itoa(ports[2]), "--metrics-port", strconv.Itoa(ports[3]), "--log-level", "error"}
	// flow's search attributes (temporal.AttrFlow, …), registered as a
	// cluster's operator registers them.
	for _, a := range []string{"FlowName", "FlowTrigger", "FlowStatus"} {
		args = append(args, "--search-attribute", a+"=Keyword")
	}
	s.cmd = exec.Command(bin, append(args, Flags()...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("starting the Temporal dev server: %w", err)
	}
	s.exited = make(chan struct{})
	go func() {
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(s.stop)
	// Ready is a Temporal frontend answering on Address (a client's dial
	// asks for the server's information): a bare TCP connection could be
	// another listener's, or the dial's own (an ephemeral port dialled
	// from itself).
	deadline := time.Now().Add(60 * time.Second)
	quiet := log.NewStructuredLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		c, err := client.DialContext(ctx, client.Options{HostPort: s.Address, Logger: quiet})
		cancel()
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-s.exited:
			return fmt.Errorf("%w on %s (%s)", errEnded, s.Address, s.cmd.ProcessState)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the Temporal dev server did not answer on %s within 60 s: %v", s.Address, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *Server) stop() {
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
}

// Log is what the server wrote, for a failing test's message.
func (s *Server) Log() string { return s.out.String() }

// freePorts finds n ports free on 127.0.0.1 now.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			_ = l.Close()
		}
	}()
	var out []int
	for range n {
		l, err := (&net.ListenConfig{}).Listen(context.Background(), "tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatalf("finding a free port: %v", err)
		}
		ls = append(ls, l)
		out = append(out, l.Addr().(*net.TCPAddr).Port)
	}
	return out
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
