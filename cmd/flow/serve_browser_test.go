package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestServePageAnswersAnAskWithAClick drives the status page in a real
// headless Chromium: it shows the flow and the live run waiting on its ask;
// clicking an option answers it, the browser lands on the run's page, and
// the page follows the run to its end over server-sent events.
func TestServePageAnswersAnAskWithAClick(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	dir := t.TempDir()
	writeFlows(t, dir, map[string]string{"gate.yaml": `name: gate
description: Asks before it ships.
nodes:
  - {id: ship, ask: Ship it?, options: [ship, hold], default: hold}
  - {id: settle, run: [sleep, "1"]}
  - {id: after, run: [echo, "${{ ship.output }}"]}
`})
	s := startServe(t, flowBinary(t), dir)
	_, m := s.call("POST", "/api/flows/gate/runs", "")
	id := m["id"].(string)

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox,
		chromedp.DisableGPU, chromedp.Flag("disable-quic", true), chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	// The first Run starts the browser: no timeout on it (chromedp.Run).
	if err := chromedp.Do(ctx, chromedp.Navigate(s.url+"/")); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	option := chromedp.CSS(`[data-ask="ship"] button[value="ship"]`)
	err := chromedp.Do(ctx,
		chromedp.WaitVisible(chromedp.CSS(`tr[data-flow="gate"]`)),
		chromedp.WaitVisible(chromedp.CSS(`table[data-running="`+id+`"] tr[data-visit="ship"]`)),
		chromedp.WaitVisible(option),
		chromedp.Click(option),
		chromedp.WaitVisible(chromedp.CSS(`#run-status`)),
	)
	page, _ := chromedp.Run(ctx, chromedp.Location())
	landed, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#run-status`)))
	if err == nil && landed != "running" {
		t.Errorf("the run page should show the run still going (it sleeps a second), shows %q", landed)
	}
	if err == nil {
		err = chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#run-status.s-succeeded`))) // no reload: the live update
	}
	if err != nil {
		dom, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
		t.Fatalf("driving the page: %v (at %s)\n%s\n%s", err, page, dom, s.stderr.String())
	}
	status, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(`#run-status`)))
	if !strings.HasSuffix(page, "/runs/"+id) || status != "succeeded" {
		t.Fatalf("after the click: page %s, status %q", page, status)
	}
	_, m = s.call("GET", "/api/runs/"+id, "")
	visits := m["visits"].([]any)
	answer := visits[0].(map[string]any)["answer"].(map[string]any)
	report := visits[2].(map[string]any)["output"].(map[string]any)["report"]
	if visits[0].(map[string]any)["output"] != "ship" || answer["by"] != "local" || report != "ship\n" && report != "ship" {
		t.Fatalf("the click's answer should be journaled and go on: %v", visits)
	}
	s.sigterm()
}
