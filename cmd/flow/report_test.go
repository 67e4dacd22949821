package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/internal/clitest"
)

// chromium finds a headless Chromium for page tests. `go -C tools tool task deps`
// installs Debian's package where it can; without it the test is Missing.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	clitest.Missing(t, "no chromium on PATH: install Debian's chromium package (`go -C tools tool task deps` does, as root) to run the report page test")
	return ""
}

// dumpDOM loads a page in headless Chromium and returns the DOM it built.
func dumpDOM(t *testing.T, page string) string {
	t.Helper()
	cmd := exec.Command(chromium(t), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
		"--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir="+t.TempDir(), "--dump-dom", "file://"+page)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return string(out)
}

func TestReportPageShowsTheRun(t *testing.T) {
	dir := t.TempDir()
	flow := `name: rep
agents:
  - {name: broken, description: fails, driver: exec, command: [sh, -c, "cat >/dev/null; echo quota exceeded >&2; exit 3"]}
nodes:
  - {id: greet, run: [echo, "<b>not bold</b>"]}
  - id: fan
    map: "[1, 2]"
    max: 2
    do: [{id: each, run: [echo, "item ${{ item }}"]}]
  - {id: last, agent: broken, prompt: x}
`
	if err := os.WriteFile(filepath.Join(dir, "rep.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(flowBinary(t), "run", "rep.yaml")
	cmd.Dir = dir
	_ = cmd.Run()
	pages, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*", "report.html"))
	if len(pages) != 1 {
		t.Fatalf("report.html: %v", pages)
	}
	raw, _ := os.ReadFile(pages[0])
	if strings.Contains(string(raw), "http://") || strings.Contains(string(raw), "https://") {
		t.Error("the report must be self-contained: it links to the network")
	}
	dom := dumpDOM(t, pages[0])
	for _, want := range []string{
		`id="run-status">failed<`,
		`data-visit="greet" data-status="ok"`,
		`data-visit="fan[2]/each" data-status="ok"`,
		`data-visit="last" data-status="failed"`,
		`Failed at <code>last</code></b>: provider`,
		"&lt;b&gt;not bold&lt;/b&gt;",
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("DOM:\n%s", dom)
	}
}
