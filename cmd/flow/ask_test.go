package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// approvalFlow asks to publish release notes an exec agent wrote: the
// question interpolates the notes' title, and show: puts the notes
// themselves before it. The notes are Markdown with a heading, a list of
// 120 changes (far past anything a summary would keep), and HTML that must
// not reach a page as HTML.
const approvalFlow = `name: release
agents:
  - name: writer
    description: writes release notes
    driver: exec
    command: [sh, -c, 'cat >/dev/null; echo "# Release 1.2"; echo; i=1; while [ $i -le 120 ]; do echo "- change $i"; i=$((i+1)); done; echo; echo "**done** <script>document.title=1</script>"']
nodes:
  - {id: notes, agent: writer, prompt: write the notes}
  - id: publish
    ask: 'Publish ${{ split(notes.output, "\n")[0] }}?'
    show: [notes]
    options: [publish, hold]
    default: hold
    timeout: 1h
  - {id: after, run: [echo, "${{ publish.output }}"]}
`

// TestAskShowsOutputsAtTheTerminal: on a terminal, `flow run` prints what
// the ask shows in full, then the question with its ${{ }} rendered, and
// takes the typed answer.
func TestAskShowsOutputsAtTheTerminal(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "release.yaml"), []byte(approvalFlow), 0o644); err != nil {
		t.Fatal(err)
	}
	ptmx, tty := openPTY(t)
	cmd := command(flowBinary(t), dir, filepath.Join(dir, "runs"), "run", "release.yaml")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	tty.Close()
	var mu sync.Mutex
	var shown bytes.Buffer
	asked := make(chan struct{})
	go func() {
		rd := bufio.NewReader(ptmx)
		once := sync.Once{}
		for {
			line, err := rd.ReadString(':')
			mu.Lock()
			shown.WriteString(line)
			mu.Unlock()
			if strings.Contains(line, "? Publish") {
				once.Do(func() { close(asked) })
			}
			if err != nil {
				return // EIO once the run ends and the terminal closes
			}
		}
	}()
	select {
	case <-asked:
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("flow run never asked:\n%s", shown.String())
	}
	if _, err := io.WriteString(ptmx, "publish\n"); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	time.Sleep(100 * time.Millisecond) // the reader drains what is left
	mu.Lock()
	out := strings.ReplaceAll(shown.String(), "\r\n", "\n")
	mu.Unlock()
	if err != nil {
		t.Fatalf("flow run: %v\n%s", err, out)
	}
	q := strings.Index(out, "? Publish # Release 1.2? [publish/hold] (default hold):")
	notes := strings.Index(out, "── notes ──\n# Release 1.2\n")
	if q < 0 || notes < 0 || notes > q {
		t.Fatalf("the terminal should show the notes, then the interpolated question:\n%s", out)
	}
	for _, want := range []string{"- change 1\n", "- change 60\n", "- change 120\n", "**done** <script>document.title=1</script>\n──\n"} {
		if !strings.Contains(out[notes:q], want) {
			t.Errorf("the notes before the question lack %q: they should be shown whole\n%s", want, out[notes:q])
		}
	}
	if strings.Contains(out[notes:q], "…") {
		t.Errorf("the notes were cut:\n%s", out[notes:q])
	}
}

// TestServePageShowsWhatAnAskShows: the run page puts the waiting ask at
// its top with the time left, the interpolated question, and the shown
// notes behind a click, rendered as Markdown with the agent's HTML
// escaped; answering there goes on.
func TestServePageShowsWhatAnAskShows(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	dir := t.TempDir()
	writeFlows(t, dir, map[string]string{"release.yaml": approvalFlow})
	s := startServe(t, flowBinary(t), dir)
	_, m := s.call("POST", "/api/flows/release/runs", "")
	id := m["id"].(string)

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
	ask := `[data-ask="publish"]`
	err := chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.CSS(ask+` details[data-shown="notes"] summary`)),
		chromedp.Click(chromedp.CSS(ask+` summary`)),
		chromedp.WaitVisible(chromedp.CSS(ask+` .md h1`)),
	)
	if err != nil {
		dom, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
		t.Fatalf("driving the page: %v\n%s\n%s", err, dom, s.stderr.String())
	}
	// One look, in one script: a live update may replace the part between
	// two queries.
	type look struct {
		First                bool
		Question, Left       string
		Summary, Title       string
		Items, Scripts, Bold int
		Open                 bool
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[look](`(function () {
		var a = document.querySelector('[data-ask="publish"]'), n = function (s) { return a.querySelectorAll(s).length; };
		return {First: document.querySelector("#live").firstElementChild === a,
			Question: a.querySelector(".q").textContent, Left: a.querySelector("[data-until]").textContent,
			Summary: a.querySelector("summary").textContent, Title: a.querySelector(".md h1").textContent,
			Items: n(".md li"), Scripts: n(".md script"), Bold: n(".md strong"), Open: a.querySelector("details").open};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	first, question, left, summary, title := got.First, got.Question, got.Left, got.Summary, got.Title
	items, scripts, bold := got.Items, got.Scripts, got.Bold
	if png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)); err == nil {
		shot := filepath.Join(t.ArtifactDir(), "ask.png")
		if err := os.WriteFile(shot, png, 0o644); err == nil {
			t.Logf("screenshot: %s", shot)
		}
	}
	if d, err := time.ParseDuration(left); !first || question != "Publish # Release 1.2?" || err != nil || d < 58*time.Minute || d > time.Hour {
		t.Errorf("the ask should top the page (%v) with the interpolated question (%q) and the time left (%q)", first, question, left)
	}
	if !strings.Contains(summary, "notes") || title != "Release 1.2" || items != 120 || scripts != 0 || bold != 1 {
		t.Errorf("the shown notes: summary %q, heading %q, %d list items (want 120), %d scripts (want 0), %d bold (want 1)", summary, title, items, scripts, bold)
	}
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	// The live update may swap the ask's part of the page between finding
	// the button and clicking it: the click then finds no node, and is
	// made again on the part the update put there.
	for range 3 {
		err = chromedp.Do(wctx, chromedp.Click(chromedp.CSS(ask+` button[value="publish"]`)))
		if err == nil || !strings.Contains(err.Error(), "Could not find node") {
			break
		}
	}
	if err == nil {
		err = chromedp.Do(wctx, chromedp.WaitVisible(chromedp.CSS(`#run-status.s-succeeded`)))
	}
	if err != nil {
		page, _ := chromedp.Run(ctx, chromedp.Location())
		dom, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
		dom = page + "\n" + dom
		t.Fatalf("answering on the page: %v\n%s\n%s", err, dom, s.stderr.String())
	}
	_, m = s.call("GET", "/api/runs/"+id, "")
	if out := m["visits"].([]any)[1].(map[string]any)["output"]; out != "publish" {
		t.Errorf("the answer journaled = %v, want publish", out)
	}
	s.sigterm()
}
