package main

import (
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The hostile-input cases of flow serve (issue 23).

const tickFlow = "name: tick\nnodes: [{id: hello, run: [echo, tick]}]\n"

// A page on another name that resolves to the server (DNS rebinding)
// passes the same-origin check: its Host gives it away, and it gets 421
// for pages, the API and answers alike. Loopback names and --host names
// are served.
func TestServeRefusesForeignHost(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFlows(t, dir, map[string]string{"tick.yaml": tickFlow})
	s := startServe(t, flowBinary(t), dir, "--host", "flow.example")
	u, _ := url.Parse(s.url)
	port := u.Port()
	for _, host := range []string{"evil.example:" + port, "evil.example", "127.0.0.1.evil.example:" + port, "localhost.evil.example"} {
		for _, c := range []struct{ method, path, body string }{
			{"GET", "/", ""},
			{"GET", "/api/flows", ""},
			{"POST", "/api/flows/tick/runs", "{}"},
			{"POST", "/api/runs/20260101-000000-aaaaaa/asks/a", `{"answer": "yes"}`},
		} {
			code, m := s.call(c.method, c.path, c.body, "Host", host, "Sec-Fetch-Site", "same-origin", "Origin", "http://"+host)
			if code != http.StatusMisdirectedRequest || !strings.Contains(m["_body"].(string), "--host") {
				t.Errorf("%s %s with Host %s: %d, want 421 naming --host\n%v", c.method, c.path, host, code, m)
			}
		}
	}
	for _, host := range []string{"localhost:" + port, "127.0.0.1:" + port, "[::1]:" + port, "flow.example:" + port, "FLOW.example"} {
		if code, m := s.call("GET", "/api/flows", "", "Host", host); code != http.StatusOK {
			t.Errorf("Host %s: %d, want 200\n%v", host, code, m)
		}
	}
	if code, _ := s.call("POST", "/api/flows/tick/runs", "{}", "Host", "localhost:"+port); code != http.StatusAccepted {
		t.Errorf("a run from a loopback Host: %d, want 202", code)
	}
	if !strings.Contains(s.stderr.String(), "host=evil.example") {
		t.Errorf("the log does not say which Host was refused:\n%s", s.stderr.String())
	}
	s.sigterm()
}

// Idle clients cannot take every descriptor: a client holding more than
// its share of connections has the rest closed at once, and another
// client is served meanwhile.
func TestServeCapsConnectionsPerClient(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFlows(t, dir, map[string]string{"tick.yaml": tickFlow})
	s := startServe(t, flowBinary(t), dir)
	addr := strings.TrimPrefix(s.url, "http://")
	// The idle clients come from another loopback address than the test's
	// own requests.
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}, Timeout: 2 * time.Second}
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()
	const idle = 200
	for range idle {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dialing: %v", err)
		}
		conns = append(conns, c)
	}
	closed := 0
	time.Sleep(time.Second) // the server accepts and closes meanwhile
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			closed++ // EOF or reset: the server closed it
		}
	}
	if closed < idle-64 {
		t.Fatalf("the server keeps %d idle connections of one client open, want at most 64", idle-closed)
	}
	c := &http.Client{Timeout: 3 * time.Second}
	resp, err := c.Get(s.url + "/api/flows")
	if err != nil {
		t.Fatalf("another client is not served while one holds its cap: %v", err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("another client: %d", resp.StatusCode)
	}
	s.sigterm()
}

// Files that are not files: a FIFO, a link to /dev/zero and a file past
// limits.file_bytes are each reported broken by name, in the log and on
// the page; start-up does not hang, the poll goes on (a FIFO added later
// does not freeze it), and SIGTERM still ends the server.
func TestServeFilesThatAreNotFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFlows(t, dir, map[string]string{"tick.yaml": tickFlow})
	flowsDir := filepath.Join(dir, "flows")
	if err := syscall.Mkfifo(filepath.Join(flowsDir, "fifo.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(flowsDir, "zero.yaml")); err != nil {
		t.Fatal(err)
	}
	big, err := os.Create(filepath.Join(flowsDir, "big.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := big.Truncate(100 << 20); err != nil { // 100 MB, sparse
		t.Fatal(err)
	}
	_ = big.Close()
	s := startServe(t, flowBinary(t), dir, "--poll", "100ms")
	for _, name := range []string{"fifo.yaml", "zero.yaml", "big.yaml"} {
		if !strings.Contains(s.stderr.String(), name) {
			t.Errorf("the log does not name %s:\n%s", name, s.stderr.String())
		}
	}
	_, page := s.call("GET", "/", "")
	for _, want := range []string{"fifo", "zero", "big", "a FIFO", "larger than limits.file_bytes"} {
		if !strings.Contains(page["_body"].(string), want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	// A FIFO added while it serves, then a good flow: the poll loads it.
	if err := syscall.Mkfifo(filepath.Join(flowsDir, "later.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeFlows(t, dir, map[string]string{"after.yaml": "name: after\nnodes: [{id: hello, run: [echo, after]}]\n"})
	await(t, 5*time.Second, "the poll to load after.yaml", func() bool {
		return strings.Contains(s.stderr.String(), "flow=after")
	})
	if d := s.sigterm(); d > 3*time.Second {
		t.Errorf("SIGTERM took %s", d)
	}
}

// The run queue is bounded: past --max-queued a run is refused with 429
// and a JSON message, and the log says so.
func TestServeQueueIsBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFlows(t, dir, map[string]string{"slow.yaml": "name: slow\nnodes: [{id: nap, run: [sleep, \"5\"]}]\n"})
	s := startServe(t, flowBinary(t), dir, "--max-runs", "1", "--max-queued", "2")
	for i, want := range []int{http.StatusAccepted, http.StatusAccepted, http.StatusAccepted, http.StatusTooManyRequests} {
		code, m := s.call("POST", "/api/flows/slow/runs", "{}")
		if code != want {
			t.Fatalf("run %d: %d, want %d\n%v", i+1, code, want, m)
		}
		if code == http.StatusTooManyRequests {
			if msg, _ := m["error"].(string); !strings.Contains(msg, "queue is full") {
				t.Errorf("the refusal does not say why: %v", m)
			}
		}
	}
	await(t, 2*time.Second, "the log to say a run was refused", func() bool {
		return strings.Contains(s.stderr.String(), "run refused: the queue is full")
	})
	s.sigterm()
}

// A token file other users can read is refused (exit 2), naming chmod.
func TestServeRefusesAWorldReadableTokenFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFlows(t, dir, map[string]string{"tick.yaml": tickFlow})
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte("ops 0123456789abcdef0123\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(tokens, 0o644); err != nil { // whatever the umask
		t.Fatal(err)
	}
	cmd := exec.Command(flowBinary(t), "serve", "flows", "--addr", "127.0.0.1:0", "--token-file", tokens)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(string(out), "chmod 600") {
		t.Fatalf("a world-readable token file must be refused (exit 2): %v\n%s", err, out)
	}
}

// Idle connections are closed: a client that opens connections and sends
// nothing, or only part of a request's headers (slowloris), has them
// closed by the server once the header timeout (10 s) passes, instead of
// holding them, and their descriptors, for good.
func TestServeClosesIdleConnections(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFlows(t, dir, map[string]string{"tick.yaml": tickFlow})
	s := startServe(t, flowBinary(t), dir)
	addr := strings.TrimPrefix(s.url, "http://")
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}, Timeout: 2 * time.Second}
	var conns []net.Conn
	for i := range 6 {
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dialing: %v", err)
		}
		defer c.Close()
		if i%2 == 1 {
			if _, err := c.Write([]byte("GET /api/flows HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")); err != nil {
				t.Fatal(err)
			}
		}
		conns = append(conns, c)
	}
	start := time.Now()
	for i, c := range conns {
		_ = c.SetReadDeadline(start.Add(20 * time.Second))
		_, err := io.Copy(io.Discard, c) // until the server closes it
		if errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("connection %d is still open after %s", i, time.Since(start))
		}
	}
	t.Logf("the idle connections were closed after %s", time.Since(start))
	s.sigterm()
}
