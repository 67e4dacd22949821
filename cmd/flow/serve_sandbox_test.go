package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// The hostile-input cases of flow serve, round three (issue 34): what a
// run directory holds is served sandboxed, no page can be framed, and a
// flow file that is a symbolic link is never read.

// get makes a GET and returns the answer's status, headers and body.
func (s *served) get(path string) (int, http.Header, string) {
	s.t.Helper()
	resp, err := http.Get(s.url + path)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(raw)
}

// endedRun starts a run of flow through the API and waits for it to end;
// it returns the run's id and directory.
func endedRun(t *testing.T, s *served, flow string) (id, dir string) {
	t.Helper()
	_, m := s.call("POST", "/api/flows/"+flow+"/runs", "")
	id, _ = m["id"].(string)
	if id == "" {
		t.Fatalf("starting %s: %v", flow, m)
	}
	await(t, 20*time.Second, "the run to end", func() bool { return runStatus(s, id) == "succeeded" })
	_, m = s.call("GET", "/api/runs/"+id, "")
	dir = m["dir"].(string)
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(s.cmd.Dir, dir)
	}
	return id, dir
}

// A run's report.html is served with a sandbox policy: no script of it
// runs, whatever wrote it; every page, the API and the report say they
// may not be framed; a report.html made a symbolic link (to a secret of
// the server's user) is refused, its target unread.
func TestServeSandboxesRunFilesAndFramesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFlows(t, dir, map[string]string{"tick.yaml": tickFlow})
	s := startServe(t, flowBinary(t), dir)
	id, runDir := endedRun(t, s, "tick")
	report := filepath.Join(runDir, "report.html")
	if err := os.WriteFile(report, []byte(`<!doctype html><p id=x>report</p><script>fetch("/api/asks")</script>`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, h, body := s.get("/runs/" + id + "/report.html")
	csp := h.Get("Content-Security-Policy")
	if code != http.StatusOK || !strings.Contains(body, "report") {
		t.Fatalf("report.html: %d\n%s", code, body)
	}
	if !strings.Contains(csp, "sandbox") || strings.Contains(csp, "allow-scripts") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Errorf("report.html is served with Content-Security-Policy %q, want a sandbox without allow-scripts and frame-ancestors 'none'", csp)
	}
	for _, path := range []string{"/", "/runs/" + id, "/runs/" + id + "/report.html", "/api/asks", "/api/runs/" + id, "/login", "/metrics"} {
		_, h, _ := s.get(path)
		if !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") || h.Get("X-Frame-Options") != "DENY" {
			t.Errorf("GET %s: Content-Security-Policy %q, X-Frame-Options %q; want frame-ancestors 'none' and DENY", path, h.Get("Content-Security-Policy"), h.Get("X-Frame-Options"))
		}
	}
	secret := filepath.Join(dir, "id_ed25519")
	if err := os.WriteFile(secret, []byte("-----BEGIN OPENSSH PRIVATE KEY----- SECRETKEYBYTES"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(report); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, report); err != nil {
		t.Fatal(err)
	}
	code, _, body = s.get("/runs/" + id + "/report.html")
	if code != http.StatusForbidden || strings.Contains(body, "SECRETKEYBYTES") || !strings.Contains(body, "symbolic link") {
		t.Errorf("a report.html linked to another file: %d, want 403 naming the link and nothing of its target\n%s", code, body)
	}
	s.sigterm()
}

// A flow file that is a symbolic link (to /etc/shadow, a .env) is refused
// by name, in the log and on the page, and nothing of what it points to is
// shown anywhere: not as a parse error's quoted line, not in the API.
func TestServeRefusesSymlinkedFlowFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFlows(t, dir, map[string]string{"tick.yaml": tickFlow})
	shadow := filepath.Join(dir, "shadow")
	env := filepath.Join(dir, ".env")
	if err := os.WriteFile(shadow, []byte("root:$6$SHADOWHASH:19000:0:99999:7:::\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A valid flow behind a link is refused too: the rule is the file's
	// kind, not its content.
	if err := os.WriteFile(env, []byte("name: env\nnodes: [{id: k, run: [echo, ENVSECRET]}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	flowsDir := filepath.Join(dir, "flows")
	if err := os.Symlink(shadow, filepath.Join(flowsDir, "shadow.yaml")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../.env", filepath.Join(flowsDir, "env.yml")); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, flowBinary(t), dir, "--poll", "100ms")
	// One added while it serves: the poll refuses it the same way.
	if err := os.Symlink(shadow, filepath.Join(flowsDir, "later.yaml")); err != nil {
		t.Fatal(err)
	}
	await(t, 5*time.Second, "the poll to see later.yaml", func() bool { return strings.Contains(s.stderr.String(), "later.yaml") })
	_, _, page := s.get("/")
	_, _, api := s.get("/api/flows")
	for where, text := range map[string]string{"the log": s.stderr.String(), "the page": page, "/api/flows": api} {
		for _, secret := range []string{"SHADOWHASH", "root:", "ENVSECRET"} {
			if strings.Contains(text, secret) {
				t.Errorf("%s shows %q, from a file behind a symbolic link:\n%s", where, secret, text)
			}
		}
		for _, name := range []string{"shadow.yaml", "env.yml", "later.yaml"} {
			if !strings.Contains(text, name) {
				t.Errorf("%s does not name %s", where, name)
			}
		}
		if !strings.Contains(text, "refused: a symbolic link") {
			t.Errorf("%s does not say the links were refused:\n%s", where, text)
		}
	}
	if code, m := s.call("POST", "/api/flows/env/runs", ""); code == http.StatusAccepted {
		t.Errorf("a run of a flow behind a link started: %v", m)
	}
	s.sigterm()
}

// The attack itself, in a browser: a run's process rewrites its
// report.html with a script that answers another run's waiting ask; a
// reader opens the report from the run's page. The script does not run,
// and the ask still waits.
func TestServeReportScriptCannotAnswer(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	dir := t.TempDir()
	writeFlows(t, dir, map[string]string{"tick.yaml": tickFlow,
		"gate.yaml": "name: gate\nnodes: [{id: ship, ask: Ship it?, options: [ship, hold]}]\n"})
	s := startServe(t, flowBinary(t), dir)
	_, m := s.call("POST", "/api/flows/gate/runs", "")
	gate := m["id"].(string)
	await(t, 10*time.Second, "the ask to wait", func() bool {
		_, m := s.call("GET", "/api/asks", "")
		asks, _ := m["asks"].([]any)
		return len(asks) == 1
	})
	id, runDir := endedRun(t, s, "tick")
	evil := `<!doctype html><title>report</title><p id="shown">a report</p><script>
fetch("/runs/` + gate + `/asks/ship", {method: "POST", headers: {"Content-Type": "application/x-www-form-urlencoded"}, body: "answer=ship"})
  .then(function () { document.title = "answered"; }, function () { document.title = "refused"; });
document.getElementById("shown").textContent = "script ran";
</script>`
	if err := os.WriteFile(filepath.Join(runDir, "report.html"), []byte(evil), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.Flag("disable-quic", true), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	if err := chromedp.Do(ctx, chromedp.Navigate(s.url+"/runs/"+id)); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	err := chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.CSS(`#report`)),
		chromedp.Click(chromedp.CSS(`#report`)),
		chromedp.WaitVisible(chromedp.CSS(`#shown`)),
		chromedp.Sleep(time.Second),
	)
	if err != nil {
		t.Fatalf("opening the report: %v", err)
	}
	shown, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#shown`)))
	if shown != "a report" {
		t.Errorf("the report's script ran: %q", shown)
	}
	_, m = s.call("GET", "/api/asks", "")
	if asks, _ := m["asks"].([]any); len(asks) != 1 || runStatus(s, gate) != "running" {
		t.Fatalf("the report's script answered run %s's ask: asks %v, status %s", gate, m["asks"], runStatus(s, gate))
	}
	s.sigterm()
}
