package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// graphJoin is an edge of the run page's graph as the browser drew it.
type graphJoin struct {
	From  string    `json:"from"`
	Kind  string    `json:"kind"`
	Start []float64 `json:"start"`
	End   []float64 `json:"end"`
	// FromBox and ToBox are the rendered boxes of both ends: x, y, w, h.
	FromBox []float64 `json:"fromBox"`
	ToBox   []float64 `json:"toBox"`
}

// TestServeGraphJoinsParallel opens the run page of examples/review.yaml
// in headless Chromium: in the SVG it draws, the loop after the parallel
// of three reviews is joined to all three branches, each edge leaving the
// foot of a branch's box and ending on the top of the loop's frame (issue
// 37: it hung off one branch).
func TestServeGraphJoinsParallel(t *testing.T) {
	t.Parallel()
	chrome := chromium(t)
	dir := t.TempDir()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	writeFlows(t, dir, nil)
	if out, err := exec.Command("cp", "-a", filepath.Join(root, "examples", "review.yaml"), filepath.Join(root, "examples", "agents"), filepath.Join(dir, "flows")).CombinedOutput(); err != nil {
		t.Fatalf("copying the example: %v\n%s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, flowBinary(t), dir)
	_, m := s.call("POST", "/api/flows/review/runs", "")
	id, _ := m["id"].(string)
	if id == "" {
		t.Fatalf("starting review: %v", m)
	}
	await(t, 60*time.Second, "the run to end", func() bool {
		st := runStatus(s, id)
		return st == "succeeded" || st == "failed"
	})

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
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#graph g[data-node="review"]`))); err != nil {
		dom, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("html")))
		t.Fatalf("the graph: %v\n%s", err, dom)
	}
	joins, err := chromedp.Run(ctx, chromedp.Evaluate[[]graphJoin](`(function () {
  function box(node) {
    var b = document.querySelector('#graph g[data-node="' + node + '"] rect').getBBox();
    return [b.x, b.y, b.width, b.height];
  }
  // The edges into review from outside it (its own body's edges end at
  // its frame's foot).
  return Array.from(document.querySelectorAll('#graph polyline[data-to="review"]:not([data-from^="review/"])')).map(function (p) {
    var pts = p.points, n = pts.numberOfItems;
    return {from: p.dataset.from, kind: p.classList.contains("join") ? "join" : p.getAttribute("class"),
      start: [pts.getItem(0).x, pts.getItem(0).y], end: [pts.getItem(n - 1).x, pts.getItem(n - 1).y],
      fromBox: box(p.dataset.from), toBox: box("review")};
  });
})()`))
	if err != nil {
		t.Fatalf("reading the graph: %v", err)
	}
	var froms []string
	for _, j := range joins {
		froms = append(froms, j.From)
		fb, tb := j.FromBox, j.ToBox
		if j.Kind != "join" {
			t.Errorf("the edge from %s into review is drawn as %q, want a join", j.From, j.Kind)
		}
		if j.Start[1] != fb[1]+fb[3] || j.Start[0] < fb[0] || j.Start[0] > fb[0]+fb[2] {
			t.Errorf("the edge from %s starts at %v, not at the foot of its box %v", j.From, j.Start, fb)
		}
		if j.End[1] != tb[1] || j.End[0] < tb[0] || j.End[0] > tb[0]+tb[2] {
			t.Errorf("the edge from %s ends at %v, not on the top of review's frame %v", j.From, j.End, tb)
		}
	}
	slices.Sort(froms)
	if want := []string{"reviews/correctness/correctness", "reviews/coverage/coverage", "reviews/style/style"}; !slices.Equal(froms, want) {
		t.Errorf("review is joined to %v, want all three branches %v", froms, want)
	}
	s.sigterm()
}
