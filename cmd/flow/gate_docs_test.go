package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// workflowRunRE finds the commands of a GitHub Actions workflow: each
// step's one-line run:.
var workflowRunRE = regexp.MustCompile(`(?m)^\s*(?:- )?run: (.+)$`)

// workflowLines is every run: line of a page's ```yaml blocks.
func workflowLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, m := range regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(string(b), -1) {
		for _, r := range workflowRunRE.FindAllStringSubmatch(m[1], -1) {
			lines = append(lines, strings.TrimSpace(r[1]))
		}
	}
	return lines
}

// shExit runs a documented line to its end and returns its output and
// exit status.
func (d *docSession) shExit(line string, timeout time.Duration) (string, int) {
	d.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := d.command(ctx, line).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		d.t.Fatalf("%s: %v", line, err)
	}
	return string(out), 0
}

// TestDocsGate runs docs/gate.md as written: every line of its shell
// block, then every flow command of its GitHub Actions workflow, in a
// reader's checkout of the examples, each with its documented outcome.
func TestDocsGate(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	bin := flowBinary(t)
	summary := filepath.Join(t.TempDir(), "step-summary.md")
	d := &docSession{t: t, dir: docPlayground(t, root), vars: map[string]string{"GITHUB_STEP_SUMMARY": summary}, bg: map[string]*docProc{},
		env:   append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"), "TMPDIR="+t.TempDir()),
		subst: []string{"go run ./cmd/flow", "flow", "../base/.flow/sweeps", ".flow/sweeps"}}
	exits := func(code int, want ...string) func(d *docSession, line string) {
		return func(d *docSession, line string) {
			out, got := d.shExit(line, 5*time.Minute)
			if got != code {
				t.Fatalf("%s: exit %d, want %d\n%s", line, got, code, out)
			}
			for _, w := range want {
				if !strings.Contains(out, w) {
					t.Fatalf("%s: no %q in its output:\n%s", line, w, out)
				}
			}
		}
	}
	steps := []docStep{
		{line: "flow gate examples/solve.yaml --min-success 0.8 --concurrency 3 --junit gate.xml", run: func(d *docSession, line string) {
			exits(0, "PASS add: 11/11", "PASS mul: 11/11", "PASS sub: 11/11")(d, line)
			b, err := os.ReadFile(filepath.Join(d.dir, "gate.xml"))
			if err != nil || strings.Count(string(b), "<testcase ") != 3 {
				t.Fatalf("gate.xml: %v\n%s", err, b)
			}
		}},
		{line: "flow gate examples/solve.yaml --model small --min-success 0.8", run: exits(1, "FAIL mul: 0/5", "PASS add")},
		{line: "flow sweep examples/solve.yaml --model medium --repeat 10 --concurrency 3", run: exits(0)},
		{line: "flow gate examples/solve.yaml --model small --baseline .flow/sweeps --reuse", run: exits(1, "FAIL mul: 0/3", "baseline 10/10")},
		{line: "flow gate examples/solve.yaml --cassette examples/solve.cassette --min-success 0.8", run: exits(0, "PASS solve: 11/11")},
	}
	workflow := []docStep{
		{line: "go install github.com/flowrun/flow/cmd/flow@latest", skip: "the flow under test is on PATH"},
		{line: "flow gate examples/solve.yaml --cassette examples/solve.cassette --min-success 0.8", run: exits(0, "PASS solve: 11/11")},
		{line: "flow gate examples/solve.yaml --min-success 0.8 --max-trials 20 --concurrency 3 --junit bar.xml", run: func(d *docSession, line string) {
			exits(0, "3 PASS")(d, line)
			if _, err := os.Stat(filepath.Join(d.dir, "bar.xml")); err != nil {
				t.Fatal(err)
			}
		}},
		{line: "git worktree add ../base ${{ github.event.pull_request.base.sha }}", skip: "the examples are no git checkout: the base branch's flow is the example as it is"},
		{line: "flow sweep examples/solve.yaml --model medium --repeat 10 --concurrency 3", run: exits(0)},
		{line: "flow gate examples/solve.yaml --model medium --baseline ../base/.flow/sweeps --reuse --concurrency 3 --junit baseline.xml", run: exits(0, "3 PASS")},
	}
	page := filepath.Join(root, "docs", "gate.md")
	for _, part := range []struct {
		lines []string
		steps []docStep
	}{{docLines(t, page), steps}, {workflowLines(t, page), workflow}} {
		var want []string
		for _, s := range part.steps {
			want = append(want, s.line)
		}
		if !slices.Equal(part.lines, want) {
			t.Fatalf("docs/gate.md's command lines are not this test's fixtures: give each line a fixture here.\nthe page: %q\nthe fixtures: %q", part.lines, want)
		}
		for _, s := range part.steps {
			if s.skip != "" {
				t.Logf("not run: %s: %s", s.line, s.skip)
				continue
			}
			s.run(d, s.line)
		}
	}
	// Each gate appended its summary to the job's.
	b, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "### flow gate solve:"); n != 7 {
		t.Errorf("$GITHUB_STEP_SUMMARY holds %d summaries, want 7:\n%s", n, b)
	}
}
