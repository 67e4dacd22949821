package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// flowTest runs flow test in dir with nothing on PATH: no agent CLI, no
// shell, nothing a turn could reach the network with.
func flowTest(t *testing.T, bin, dir string, args ...string) (string, error) {
	t.Helper()
	runs := t.TempDir()
	c := exec.Command(bin, append([]string{"test"}, args...)...)
	c.Dir = dir
	c.Env = []string{"PATH=" + t.TempDir(), "HOME=" + runs, "FLOW_RUNS_DIR=" + runs, "TMPDIR=" + runs}
	out, err := c.CombinedOutput()
	return string(out), err
}

// TestFlowTestExamplesOffline replays every example's cassette with the
// agent CLIs absent from PATH, in a copy of the examples at another path
// than the one they were recorded at: each passes; an edited prompt fails
// naming its node, with the diff. The examples' commands are stubbed from
// the cassette (their output, a git log, changes with every commit);
// writers is left out (docs/reuse-and-tests.md: its prompt names a
// repository made at a fresh path each run).
func TestFlowTestExamplesOffline(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	clone := filepath.Join(t.TempDir(), "elsewhere", "clone")
	if err := os.MkdirAll(clone, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", filepath.Join(root, "examples"), filepath.Join(clone, "examples")).CombinedOutput(); err != nil {
		t.Fatalf("copying the examples: %v\n%s", err, out)
	}
	files, _ := filepath.Glob(filepath.Join(clone, "examples", "*.yaml"))
	bin := flowBinary(t)
	tested := 0
	for _, f := range files {
		name := filepath.Base(f)
		if name == "writers.yaml" {
			continue
		}
		tested++
		t.Run(name, func(t *testing.T) {
			out, err := flowTest(t, bin, clone, "--stub-commands", "examples/"+name)
			if err != nil || !strings.Contains(out, "passed against") {
				t.Fatalf("flow test examples/%s: %v\n%s", name, err, out)
			}
		})
	}
	if tested < 6 {
		t.Fatalf("only %d examples have cassettes", tested)
	}
	p := filepath.Join(clone, "examples", "review.yaml")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	const old = "Give your verdict."
	if !strings.Contains(string(b), old) {
		t.Fatalf("review.yaml holds no %q", old)
	}
	if err := os.WriteFile(p, []byte(strings.Replace(string(b), old, "Give your verdict now.", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := flowTest(t, bin, clone, "--stub-commands", "examples/review.yaml")
	if err == nil {
		t.Fatalf("flow test passed with an edited prompt:\n%s", out)
	}
	for _, want := range []string{"/verdict does not match the recording", "does not match the recording: prompt changed at line", "--- recorded", "+Give your verdict now."} {
		if !strings.Contains(out, want) {
			t.Errorf("the failure does not say %q:\n%s", want, out)
		}
	}
}

// TestReuseDocCommands runs every command line of docs/reuse-and-tests.md's
// sh blocks, in order, as written, from a copy of the repository's
// examples: each must exit 0.
func TestReuseDocCommands(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs", "reuse-and-tests.md"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	in := false
	for _, l := range strings.Split(string(doc), "\n") {
		switch {
		case l == "```sh":
			in = true
		case l == "```":
			in = false
		case in && strings.TrimSpace(l) != "":
			lines = append(lines, l)
		}
	}
	if len(lines) < 8 {
		t.Fatalf("the doc has %d command lines", len(lines))
	}
	dir := t.TempDir()
	for _, f := range []string{"examples", "go.mod", "README.md", "Taskfile.yml"} {
		if out, err := exec.Command("cp", "-r", filepath.Join(root, f), dir).CombinedOutput(); err != nil {
			t.Fatalf("copying %s: %v\n%s", f, err, out)
		}
	}
	bin := flowBinary(t)
	runs := t.TempDir()
	for _, l := range lines {
		c := exec.Command("bash", "-c", l)
		c.Dir = dir
		c.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"), "FLOW_RUNS_DIR="+runs, "TMPDIR="+runs)
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", l, err, out)
		}
	}
}

// TestRunReuseCLI: flow run --reuse answers every visit of an unedited
// flow from the last run, says what it saved, and flow show marks the
// reused visits (the commands run again); flow plan --reuse names what
// an edit re-runs.
func TestRunReuseCLI(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range []string{"examples", "go.mod", "README.md", "Taskfile.yml"} {
		if out, err := exec.Command("cp", "-r", filepath.Join(root, f), dir).CombinedOutput(); err != nil {
			t.Fatalf("copying %s: %v\n%s", f, err, out)
		}
	}
	bin := flowBinary(t)
	runs := t.TempDir()
	flow := func(args ...string) string {
		t.Helper()
		out, err := command(bin, dir, runs, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("flow %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	flow("run", "examples/fanout.yaml")
	out := flow("run", "--reuse", "examples/fanout.yaml")
	if !strings.Contains(out, "reused 4 visit(s)") {
		t.Errorf("flow run --reuse did not say it reused the 4 agent visits:\n%s", out)
	}
	if show := flow("show"); strings.Count(show, "↺") != 4 || !strings.Contains(show, "reused from ") {
		t.Errorf("flow show does not mark the 4 reused visits:\n%s", show)
	}
	p := filepath.Join(dir, "examples", "fanout.yaml")
	b, _ := os.ReadFile(p)
	os.WriteFile(p, []byte(strings.Replace(string(b), "Write a short report", "Write a long report", 1)), 0o644)
	plan := flow("plan", "--reuse", "examples/fanout.yaml")
	if !strings.Contains(plan, "run    report  prompt changed at line 1") || !strings.Contains(plan, "3 of 7 visits reused") {
		t.Errorf("flow plan --reuse:\n%s", plan)
	}
}
