package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// The hostile cases of traces (issue 34): what the exporter sends and
// says carries no secret, its headers go to the collector named and
// nowhere else, and an endpoint it cannot use is refused.

// collector records the OTLP requests it gets, their headers and bodies
// (ungzipped).
type collector struct {
	*httptest.Server
	mu     sync.Mutex
	bodies [][]byte
	keys   []string
}

func startCollector(t *testing.T, answer func(w http.ResponseWriter, r *http.Request) bool) *collector {
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rd io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			if z, err := gzip.NewReader(r.Body); err == nil {
				rd = z
			}
		}
		b, _ := io.ReadAll(rd)
		c.mu.Lock()
		c.bodies, c.keys = append(c.bodies, b), append(c.keys, r.Header.Get("X-Api-Key"))
		c.mu.Unlock()
		if answer == nil || !answer(w, r) {
			w.Header().Set("Content-Type", "application/x-protobuf")
			w.WriteHeader(200)
		}
	}))
	t.Cleanup(c.Close)
	return c
}

func (c *collector) got() (bodies [][]byte, keys []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bodies, c.keys
}

// tracedProject is a flow whose agent echoes the exporter's headers and
// whose second agent fails saying a GitHub token flow was never told of.
func tracedProject(t *testing.T, pat string) string {
	dir := t.TempDir()
	flow := `name: f
agents:
  - name: echo
    description: echoes its environment
    driver: exec
    command: [bash, -c, 'cat >/dev/null; echo "headers: $OTEL_EXPORTER_OTLP_HEADERS"']
  - name: broken
    description: fails naming a token
    driver: exec
    command: [bash, -c, 'cat >/dev/null; echo "denied for ` + pat + `" >&2; exit 3']
nodes:
  - id: echo
    agent: echo
    prompt: Echo.
  - id: broken
    agent: broken
    prompt: Fail.
`
	if err := os.WriteFile(filepath.Join(dir, "f.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestHostileTraceExporter: OTEL_EXPORTER_OTLP_HEADERS's key is in no
// file of the run and in nothing flow prints; a failed visit's span says
// why without the token its message held; a collector that answers 307
// to another host does not get the key sent there; and the warning that
// says the traces were not sent holds no secret.
func TestHostileTraceExporter(t *testing.T) {
	const key = "otlp-key-Zq8vW2xKp9LmN4rT7yB1"
	pat := "ghp_" + strings.Repeat("Zq8vW2xKp9LmN4rT7yB1", 2)[:36]
	bin := flowBinary(t)

	t.Run("sent", func(t *testing.T) {
		col := startCollector(t, nil)
		dir := tracedProject(t, pat)
		runs := t.TempDir()
		c := command(bin, dir, runs, "run", "f.yaml")
		c.Env = append(c.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+col.URL, "OTEL_EXPORTER_OTLP_HEADERS=x-api-key="+key)
		out, err := c.CombinedOutput()
		if exitCode(err) != 1 {
			t.Fatalf("flow run: %v\n%s", err, out)
		}
		if strings.Contains(string(out), key) {
			t.Errorf("flow printed the exporter's key:\n%s", out)
		}
		leaked := grepDir(t, runs, key)
		if len(leaked) > 0 {
			t.Errorf("the exporter's key is in %v", leaked)
		}
		bodies, keys := col.got()
		if len(bodies) == 0 || keys[0] != key {
			t.Fatalf("the collector got %d requests, keys %q", len(bodies), keys)
		}
		all := bytes.Join(bodies, nil)
		if bytes.Contains(all, []byte(pat)) || bytes.Contains(all, []byte(key)) {
			t.Errorf("the spans hold a secret")
		}
		if !bytes.Contains(all, []byte("[redacted]")) {
			t.Errorf("the failed visit's span does not say why")
		}
	})

	t.Run("redirect", func(t *testing.T) {
		far := startCollector(t, nil)
		near := startCollector(t, func(w http.ResponseWriter, r *http.Request) bool {
			// 127.0.0.1 and localhost: another host, the same machine.
			http.Redirect(w, r, strings.Replace(far.URL, "127.0.0.1", "localhost", 1)+r.URL.Path, http.StatusTemporaryRedirect)
			return true
		})
		dir := tracedProject(t, pat)
		c := command(bin, dir, t.TempDir(), "run", "f.yaml")
		c.Env = append(c.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+near.URL, "OTEL_EXPORTER_OTLP_HEADERS=x-api-key="+key)
		out, _ := c.CombinedOutput()
		if bodies, keys := far.got(); len(bodies) > 0 {
			t.Errorf("the redirect was followed to another host, with keys %q", keys)
		}
		if !strings.Contains(string(out), "warning: traces not sent") || !strings.Contains(string(out), "another host") {
			t.Errorf("no warning says why:\n%s", out)
		}
		if strings.Contains(string(out), key) {
			t.Errorf("flow printed the key:\n%s", out)
		}
	})
}

// grepDir lists the files under dir that hold s.
func grepDir(t *testing.T, dir, s string) []string {
	t.Helper()
	var found []string
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() {
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(s)) {
				found = append(found, p)
			}
		}
		return nil
	})
	return found
}

// TestHostileTraceEndpointMalformed: an endpoint the SDK would replace
// with https://localhost:4318 is refused, exit 2, naming the variable,
// before the run starts.
func TestHostileTraceEndpointMalformed(t *testing.T) {
	bin := flowBinary(t)
	for _, ep := range []string{"localhost:4318", "http//127.0.0.1:4318", "ftp://127.0.0.1:4318", "http://", "http://user:pw@127.0.0.1:4318", "://x"} {
		for _, v := range []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"} {
			dir := tracedProject(t, "nothing")
			runs := t.TempDir()
			c := command(bin, dir, runs, "run", "f.yaml")
			c.Env = append(c.Env, v+"="+ep)
			out, err := c.CombinedOutput()
			if code := exitCode(err); code != 2 || !strings.Contains(string(out), v) {
				t.Errorf("%s=%s: exit %d, want 2 naming the variable\n%s", v, ep, code, out)
			}
			if entries, _ := os.ReadDir(runs); len(entries) > 0 {
				t.Errorf("%s=%s: a run started", v, ep)
			}
		}
	}
}
