package local_test

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/steps/delegate"
)

// openTurn opens the run's socket in a new run directory with one turn
// that answers every call.
func openTurn(t *testing.T) *engine.Delegation {
	t.Helper()
	srv, closeSrv := local.DelegatesWith([]string{"/bin/flow", "mcp-delegate"})(t.TempDir())
	t.Cleanup(closeSrv)
	d, closeTurn, err := srv.Serve(context.Background(), "lead", func(ctx context.Context, req engine.DelegateRequest) engine.DelegateReply {
		return engine.DelegateReply{Answer: "ok"}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeTurn)
	return d
}

// TestDelegationSocketBoundsWhatItHoldsBeforeTheToken: 40 connections
// that each send 2 MiB with no line break (no token) make the server hold
// at most its 64 KiB token line each, not what they send: the heap grows
// by far less than the 80 MiB sent.
func TestDelegationSocketBoundsWhatItHoldsBeforeTheToken(t *testing.T) {
	d := openTurn(t)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	junk := []byte(strings.Repeat("x", 2<<20))
	var conns []net.Conn
	for range 40 {
		c, err := net.Dial("unix", d.Socket)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		go func() { _, _ = c.Write(junk) }()
	}
	time.Sleep(500 * time.Millisecond)
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	for _, c := range conns {
		c.Close()
	}
	grew := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("the heap grew by %d KiB for 40 connections sending 2 MiB each", grew>>10)
	if grew > 16<<20 {
		t.Errorf("the heap grew by %d MiB: the server buffers what comes before a token", grew>>20)
	}
	// A connection whose first line is too long is told so.
	c, err := net.Dial("unix", d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	go func() { _, _ = c.Write(junk) }()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	if !strings.Contains(line, "token on a line of its own") {
		t.Errorf("a first line past 64 KiB is answered %q", line)
	}
}

// TestDelegationSocketCapsConnections: past the run's cap, a connection
// is refused at once, saying why; calls go on once some close.
func TestDelegationSocketCapsConnections(t *testing.T) {
	d := openTurn(t)
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range 256 {
		c, err := net.Dial("unix", d.Socket)
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	time.Sleep(200 * time.Millisecond)
	c, err := net.Dial("unix", d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
	line, _ := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if !strings.Contains(line, "256 connections") {
		t.Fatalf("the connection past the cap was answered %q", line)
	}
	for _, c := range idle {
		c.Close()
	}
	idle = nil
	time.Sleep(200 * time.Millisecond)
	if reply, err := delegate.Call(context.Background(), d.Socket, d.Token, "scout", "look"); err != nil || reply.Answer != "ok" {
		t.Errorf("a call after the idle connections closed = %+v, %v", reply, err)
	}
}

// TestDelegationSocketIsPrivate: whatever the umask, the socket is mode
// 0600 in a directory of mode 0700.
func TestDelegationSocketIsPrivate(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)
	d := openTurn(t)
	st, err := os.Stat(d.Socket)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("the socket's mode is %v", st.Mode().Perm())
	}
	dst, err := os.Stat(filepath.Dir(d.Socket))
	if err != nil {
		t.Fatal(err)
	}
	if dst.Mode().Perm() != 0o700 {
		t.Errorf("the socket's directory's mode is %v", dst.Mode().Perm())
	}
}

// TestDelegationSocketPiExtension: pi's extension (steps/pi/delegate.ts)
// speaks the socket's protocol, its token line first, and its process is
// answered once bound; a process that is not the turn's is refused.
func TestDelegationSocketPiExtension(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "steps", "pi", "delegate.ts"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ext := strings.Replace(string(src), "/*DEFINITION*/ {}", `{"name":"delegate","socketEnv":"S","tokenEnv":"T"}`, 1)
	main := `let tool;
(await import("./delegate.mjs")).default({ registerTool: (t) => { tool = t; } });
try {
	const r = await tool.execute("1", { agent: "scout", task: "look" });
	console.log("ANSWER " + r.content[0].text);
} catch (e) { console.log("ERROR " + e.message); }
`
	if err := os.WriteFile(filepath.Join(dir, "delegate.mjs"), []byte(ext), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.mjs"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	// Another turn's process: not the caller's, nor an ancestor of it.
	other := exec.Command("sleep", "30")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	for _, bind := range []bool{true, false} {
		d := openTurn(t)
		cmd := exec.Command(node, filepath.Join(dir, "main.mjs"))
		cmd.Env = append(os.Environ(), "S="+d.Socket, "T="+d.Token)
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if bind {
			d.Bind(cmd.Process.Pid)
		} else {
			d.Bind(other.Process.Pid)
		}
		_ = cmd.Wait()
		got := strings.TrimSpace(out.String())
		if bind && got != "ANSWER ok" || !bind && !strings.Contains(got, "does not come from the turn's process") {
			t.Errorf("bound=%v: %s", bind, got)
		}
	}
}
