package reuse_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/reuse"
)

// TestDryNamesFirstDifference: flow plan --reuse's walk runs nothing,
// reuses what the earlier run recorded, and names for each other visit
// the first input that differs.
func TestDryNamesFirstDifference(t *testing.T) {
	base := copyTree(t, "testdata/mutation")
	baseRes, _ := runFlow(t, base, baseInput)
	dir := copyTree(t, "testdata/mutation")
	edit(t, dir, "big.yaml", "D three.", "D three, again.")
	edit(t, dir, "big.yaml", "models: {m: small}", "models: {m: large}")
	side := filepath.Join(dir, "side")
	t.Setenv("SIDE", side)
	plan, diags := flows.Load(filepath.Join(dir, "big.yaml"), flows.Options{Disk: osdisk.OS, WorkDir: dir, UserAgentDirs: []string{}})
	if plan == nil {
		t.Fatal(diags)
	}
	set, err := reuse.Open("", baseRes.Dir)
	if err != nil {
		t.Fatal(err)
	}
	dry := &reuse.Dry{From: set}
	res, err := local.Execute(context.Background(), plan, local.Config{WorkDir: project(t, dir), RunsDir: t.TempDir(), Leaves: dry}, engine.Options{Input: baseInput})
	if err != nil || !res.OK {
		t.Fatalf("the dry walk failed: %v %v", err, res.Failure)
	}
	if _, err := os.Stat(side); err == nil {
		t.Error("the dry walk ran an agent or a command")
	}
	want := map[string]string{
		"d3": "prompt changed at line 1", "d4": "reads `d3` which re-runs", "d6": "reads `d5` which re-runs",
		"par/mid/p5": `model changed (recorded "small", now "large")`, "last": "reads `",
	}
	got := map[string]string{}
	for _, d := range dry.Decisions() {
		if !d.Reuse {
			got[d.Visit] = d.Reason
		}
	}
	if len(got) != 6 {
		t.Errorf("%d visits would run, want 6 (d3-d6, p5, last): %v", len(got), got)
	}
	for v, reason := range want {
		if !strings.HasPrefix(got[v], reason) {
			t.Errorf("%s: %q, want %q", v, got[v], reason)
		}
	}
}
