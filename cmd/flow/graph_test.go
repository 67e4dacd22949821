package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestServePageDrawsTheFlow: a run's page draws the flow as a graph whose
// nodes carry their live states, iteration and item counts, and a
// timeline, for a map inside a loop while it runs and after it ends. The
// screenshots go to the test's artifacts (go test -artifacts keeps them).
func TestServePageDrawsTheFlow(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	dir := t.TempDir()
	gate := filepath.Join(dir, "go")
	writeFlows(t, dir, map[string]string{"grid.yaml": `name: grid
description: A map inside a loop, one item waiting on a file.
nodes:
  - {id: plan, run: [echo, planned]}
  - id: rounds
    loop: {until: "rounds.iteration >= 2", max: 3}
    do:
      - id: fan
        map: "[1, 2, 3]"
        max: 3
        do:
          - id: work
            run: [sh, -c, 'if [ "$N" = 3 ]; then while [ ! -f ` + gate + ` ]; do sleep 0.05; done; fi; echo "item $N"']
            env: {N: "${{ item }}"}
  - id: check
    parallel:
      lint: [{id: lint, run: [echo, lint]}]
      test: [{id: test, run: [echo, test]}]
`, "yearly.yaml": "name: yearly\nschedule: {cron: \"0 9 1 1 *\", tz: Asia/Tokyo}\nnodes: [{id: hello, run: [echo, hi]}]\n"})
	s := startServe(t, flowBinary(t), dir)
	_, m := s.call("POST", "/api/flows/grid/runs", "")
	id := m["id"].(string)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.Flag("disable-quic", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1100, 1000))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	if err := chromedp.Do(ctx, chromedp.Navigate(s.url+"/runs/"+id)); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	artifacts := t.ArtifactDir()
	shot := func(name string) {
		png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Errorf("screenshot: %v", err)
			return
		}
		p := filepath.Join(artifacts, name)
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Error(err)
		}
		t.Logf("screenshot: %s", p)
	}
	type node struct{ State, Text string }
	nodes := func() map[string]node {
		got, _ := chromedp.Run(ctx, chromedp.Evaluate[map[string]node](`(function () {
			var out = {};
			document.querySelectorAll("#graph [data-node]").forEach(function (g) { out[g.dataset.node] = {State: g.dataset.state, Text: g.textContent}; });
			return out;
		})()`))
		return got
	}
	fail := func(format string, args ...any) {
		dom, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("#live")))
		t.Fatalf(format+"\n%s\n%s", append(args, dom, s.stderr.String())...)
	}
	// Item 3 of the first round waits: the graph, updated live, shows it.
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#graph [data-node="rounds/fan/work"][data-state="running"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#graph [data-node="rounds/fan"] text`))); err != nil {
		fail("the graph never showed the work running: %v", err)
	}
	time.Sleep(300 * time.Millisecond) // the other items' ends reach the page
	running := nodes()
	want := map[string]string{"plan": "ok", "rounds": "running", "rounds/fan": "running", "rounds/fan/work": "running",
		"check": "pending", "check/lint/lint": "pending", "check/test/test": "pending"}
	for n, st := range want {
		if running[n].State != st {
			t.Errorf("while item 3 waits, node %s is %q, want %q", n, running[n].State, st)
		}
	}
	if !strings.Contains(running["rounds"].Text, "1 of max 3 iterations") || !strings.Contains(running["rounds/fan"].Text, "3 items") {
		t.Errorf("the frames should count: rounds %q, fan %q", running["rounds"].Text, running["rounds/fan"].Text)
	}
	if n, _ := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('#timeline [data-bar]').length`)); n < 3 {
		t.Errorf("the timeline has %d bars, want one per leaf visit so far (plan and the items)", n)
	}
	shot("running.png")

	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#run-status.s-succeeded`)),
		chromedp.WaitVisible(chromedp.CSS(`#graph [data-node="check/test/test"][data-state="ok"]`))); err != nil {
		fail("the run's end never reached the graph: %v", err)
	}
	done := nodes()
	for _, n := range []string{"plan", "rounds", "rounds/fan", "rounds/fan/work", "check", "check/lint/lint"} {
		if done[n].State != "ok" {
			t.Errorf("after the run, node %s is %q, want ok", n, done[n].State)
		}
	}
	if !strings.Contains(done["rounds"].Text, "2 of max 3 iterations") || !strings.Contains(done["rounds/fan/work"].Text, "6 visits") {
		t.Errorf("after two rounds: rounds %q, work %q", done["rounds"].Text, done["rounds/fan/work"].Text)
	}
	href, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#report") ? document.querySelector("#report").getAttribute("href") : ""`))
	if href != "/runs/"+id+"/report.html" {
		t.Errorf("the page links the report as %q", href)
	}
	if code, _ := s.call("GET", href, ""); code != 200 {
		t.Errorf("GET %s = %d", href, code)
	}
	started, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`time[data-local]`)))
	if !strings.Contains(started, " UTC ") || !strings.HasSuffix(started, " here)") {
		t.Errorf("the start should name its zone and give the browser's time: %q", started)
	}
	shot("done.png")
	// The index gives a schedule's next fire in the schedule's zone.
	if err := chromedp.Do(ctx, chromedp.Navigate(s.url+"/"), chromedp.WaitVisible(chromedp.CSS(`tr[data-flow="yearly"] time`))); err != nil {
		fail("the index: %v", err)
	}
	if next, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`tr[data-flow="yearly"] time`))); !strings.Contains(next, "-01-01 09:00:00 JST") {
		t.Errorf("the next fire should be in the schedule's zone: %q", next)
	}
	s.sigterm()
}
