package archtest

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// workflowKnown are the findings of workflowcheck (Temporal's determinism
// checker) over the engine and temporal's workflow code that are accepted:
// none. Each line would be a function and what it does itself; a finding
// not listed fails the test, and so does a listed line that no longer
// holds (docs/decisions.md, "A pure walker").
var workflowKnown = []string{}

// TestWorkflowcheck builds workflowcheck from the tools module (its own
// go.mod, so that its dependencies stay out of flow's) and runs it over
// package engine and temporal's workflow code, with workflowcheck.yaml
// (what is the Go runtime's, not the workflow's). It takes about a
// minute, so -short skips it; the test task runs it.
func TestWorkflowcheck(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: workflowcheck takes about a minute")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	root := moduleRoot(t)
	bin := filepath.Join(t.TempDir(), "workflowcheck")
	build := exec.Command(goBin, "build", "-o", bin, "go.temporal.io/sdk/contrib/tools/workflowcheck")
	build.Dir = filepath.Join(root, "tools")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building workflowcheck: %v\n%s", err, out)
	}
	check := exec.Command(bin, "-test=false", "-json",
		"-config", filepath.Join(root, "internal", "archtest", "workflowcheck.yaml"), "./engine/...", "./temporal")
	check.Dir = root
	var stderr bytes.Buffer
	check.Stderr = &stderr
	out, err := check.Output()
	if err != nil {
		t.Fatalf("workflowcheck: %v\n%s", err, stderr.String())
	}
	got := workflowFindings(t, out)
	for _, f := range got {
		if !slices.Contains(workflowKnown, f) {
			t.Errorf("workflow code is non-deterministic: %s", f)
		}
	}
	for _, k := range workflowKnown {
		if !slices.Contains(got, k) {
			t.Errorf("%q no longer holds: remove it from workflowKnown", k)
		}
	}
}

// workflowFindings reads workflowcheck's -json output into its leaf
// findings: each function that is non-deterministic by what it does
// itself, not by what it calls.
func workflowFindings(t *testing.T, out []byte) []string {
	t.Helper()
	var byPkg map[string]map[string][]struct{ Message string }
	if err := json.Unmarshal(out, &byPkg); err != nil {
		t.Fatalf("reading workflowcheck's output: %v\n%s", err, out)
	}
	var got []string
	for _, analyzers := range byPkg {
		for _, diags := range analyzers {
			for _, d := range diags {
				for line := range strings.SplitSeq(d.Message, "\n") {
					fn, reason, ok := strings.Cut(strings.TrimSpace(line), " is non-deterministic, reason: ")
					if ok && !strings.HasPrefix(reason, "calls non-deterministic function") {
						got = append(got, fn+": "+reason)
					}
				}
			}
		}
	}
	slices.Sort(got)
	return slices.Compact(got)
}
