package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// newcomerDir is a fresh directory with files (name -> content) written.
func newcomerDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// flowAt runs the flow binary in dir and returns its output and exit code.
func flowAt(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	c := exec.Command(flowBinary(t), args...)
	c.Dir = dir
	c.Env = append(os.Environ(), "FLOW_DRIVER=exec")
	out, err := c.CombinedOutput()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return string(out), 0
}

const pickyFlow = `name: picky
agents:
  - {name: picky, description: d, driver: exec, command: [sh, -c, "cat >/dev/null; test -e ok && echo fine"]}
nodes:
  - {id: first, run: [echo, first]}
  - {id: second, agent: picky, prompt: go}
`

// TestFailureSaysHowToResume: a failed run ends with the command that
// resumes it, and the resume says "resuming" before "run … started".
func TestFailureSaysHowToResume(t *testing.T) {
	t.Parallel()
	dir := newcomerDir(t, map[string]string{"picky.yaml": pickyFlow})
	out, code := flowAt(t, dir, "run", "picky.yaml")
	m := regexp.MustCompile("resume with `flow resume (\\S+)`").FindStringSubmatch(out)
	if code != exitFailed || m == nil {
		t.Fatalf("a failed run (exit %d) does not say how to resume it:\n%s", code, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "ok"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = flowAt(t, dir, "resume", m[1])
	resuming, started := strings.Index(out, "resuming run "+m[1]), strings.Index(out, "run "+m[1]+" started")
	if code != 0 || resuming < 0 || started < 0 || resuming > started {
		t.Fatalf("flow resume (exit %d) must say resuming before started:\n%s", code, out)
	}
}

// TestFlowDirsAreGitIgnored: the .flow directory a run makes holds a
// .gitignore of *; a .flow the project keeps (agents, configuration) is
// not hidden, only the runs directory flow makes in it.
func TestFlowDirsAreGitIgnored(t *testing.T) {
	t.Parallel()
	flow := "name: f\nnodes:\n  - {id: n, run: [echo, hi]}\n"
	fresh := newcomerDir(t, map[string]string{"f.yaml": flow})
	if out, code := flowAt(t, fresh, "run", "f.yaml"); code != 0 {
		t.Fatalf("flow run: %d\n%s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(fresh, ".flow", ".gitignore")); err != nil || string(b) != "*\n" {
		t.Errorf(".flow/.gitignore = %q, %v; want *", b, err)
	}
	kept := newcomerDir(t, map[string]string{"f.yaml": flow, ".flow/agents/a.md": "---\nname: a\ndescription: d\n---\n"})
	if out, code := flowAt(t, kept, "run", "f.yaml"); code != 0 {
		t.Fatalf("flow run: %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(kept, ".flow", ".gitignore")); err == nil {
		t.Error("a .flow the project keeps was hidden from git")
	}
	if b, err := os.ReadFile(filepath.Join(kept, ".flow", "runs", ".gitignore")); err != nil || string(b) != "*\n" {
		t.Errorf(".flow/runs/.gitignore = %q, %v; want *", b, err)
	}
}

// TestMessagesSayThingsOnce: an unstartable command's failure says
// "unavailable" once; an inline exec agent's ./x.sh is relative to its
// flow file; an expression's failure names a list a list, not
// []interface {}; a guard written as ${{ … }} gets a hint.
func TestMessagesSayThingsOnce(t *testing.T) {
	t.Parallel()
	dir := newcomerDir(t, map[string]string{
		"sub/x.sh": "#!/bin/sh\ncat >/dev/null; echo from x\n",
		"sub/inl.yaml": `name: inl
agents:
  - {name: xer, description: d, driver: exec, command: [./x.sh]}
nodes:
  - {id: first, agent: xer, prompt: go}
  - {id: second, agent: {name: yer, description: d, driver: exec, command: [./x.sh]}, prompt: go}
`,
		"gone.yaml": `name: gone
nodes:
  - {id: first, run: [./nonexistent.sh]}
`,
		"anyu.yaml": `name: anyu
input:
  items: {type: any}
nodes:
  - id: again
    loop: {until: "input.items", max: 2}
    do:
      - {id: say, run: [echo, hi]}
`,
		"guard.yaml": `name: guard
nodes:
  - id: again
    loop: {until: "${{ say.output.passed }}", max: 2}
    do:
      - {id: say, run: [echo, hi]}
`,
	})
	if out, code := flowAt(t, dir, "run", "sub/inl.yaml"); code != 0 || !strings.Contains(out, "succeeded") {
		t.Errorf("inline exec agents' ./x.sh beside the flow file (exit %d):\n%s", code, out)
	}
	out, code := flowAt(t, dir, "run", "gone.yaml")
	if code != exitFailed || !strings.Contains(out, "unavailable: starting ") || strings.Count(out, "unavailable:") != strings.Count(out, "unavailable: starting") {
		t.Errorf("an unstartable command (exit %d) must say unavailable once per line:\n%s", code, out)
	}
	out, code = flowAt(t, dir, "run", "anyu.yaml", "--input", `{"items": [1]}`)
	if code != exitFailed || strings.Contains(out, "interface {}") || !strings.Contains(out, "bool(list)") {
		t.Errorf("an expression's failure (exit %d) names Go types:\n%s", code, out)
	}
	out, code = flowAt(t, dir, "validate", "guard.yaml")
	if code != exitInvalid || !strings.Contains(out, "hint: guards, map items and other expression keys are bare expressions: write say.output.passed") {
		t.Errorf("until: ${{ … }} (exit %d) gets no hint:\n%s", code, out)
	}
}

// TestHelpAndFlags: every command's help has examples; --project-agents
// is a flag of the commands that resolve agents only; flow --version says
// the build.
func TestHelpAndFlags(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, c := range []string{"run", "validate", "plan", "resume", "runs", "show", "tail", "gc", "sweep", "pin", "agents", "schema", "serve", "worker"} {
		out, code := flowAt(t, dir, c, "--help")
		if code != 0 || !strings.Contains(out, "Examples:\n  flow ") {
			t.Errorf("flow %s --help has no examples (exit %d):\n%s", c, code, out)
		}
		has := strings.Contains(out, "--project-agents")
		want := map[string]bool{"run": true, "validate": true, "plan": true, "resume": true, "sweep": true, "pin": true, "agents": true, "serve": true}[c]
		if has != want {
			t.Errorf("flow %s --help: --project-agents shown %v, want %v", c, has, want)
		}
	}
	if out, code := flowAt(t, dir, "--version"); code != 0 || !strings.HasPrefix(out, "flow ") || !strings.Contains(out, "go1.") {
		t.Errorf("flow --version (exit %d): %q", code, out)
	}
}

// TestShowSaysAScoreFailedCell: a sweep cell whose run succeeded but whose
// score said no shows as failed, with the reason, in flow show.
func TestShowSaysAScoreFailedCell(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "examples"), os.DirFS(filepath.Join(root, "examples"))); err != nil {
		t.Fatal(err)
	}
	if out, code := flowAt(t, dir, "sweep", "examples/solve.yaml", "--model", "small", "--repeat", "1"); code != 0 {
		t.Fatalf("flow sweep: %d\n%s", code, out)
	}
	cells, _ := filepath.Glob(filepath.Join(dir, ".flow", "sweeps", "*", "cells", "*"))
	found := false
	for _, c := range cells {
		out, _ := flowAt(t, dir, "show", c)
		if strings.Contains(out, "  succeeded  ") && strings.Contains(out, "task mul") {
			found = true
			if !strings.Contains(out, "sweep cell ") || !strings.Contains(out, ": failed — score: the score ") {
				t.Errorf("flow show of a cell whose score failed:\n%s", out)
			}
		}
	}
	if !found {
		t.Fatalf("no succeeded run of task mul among %d cells", len(cells))
	}
}
