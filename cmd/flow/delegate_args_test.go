package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestDelegateTaskIsNeverAFlag: a task that starts with - reaches the
// child as it is, alone or after --; it is never read as an option (issue
// 34: `flow delegate scout -h` printed the help as the child's answer).
func TestDelegateTaskIsNeverAFlag(t *testing.T) {
	const flow = `name: lead
agents:
  - name: lead
    description: sends tasks that look like options
    driver: exec
    command: [bash, -c, 'cat >/dev/null; a=$(flow delegate scout -h) || exit 1; b=$(flow delegate scout -- --help) || exit 1; c=$(flow delegate -- scout "--model x; -v") || exit 1; echo "lead heard: [$a] [$b] [$c]"']
  - name: scout
    description: says its task
    driver: exec
    command: [bash, -c, 'task=$(head -1); echo "scout did: $task"']
nodes:
  - id: lead
    agent: lead
    prompt: Go.
    delegate: {agents: [scout], max_children: 3}
`
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lead.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := flowBinary(t)
	env := append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"), "FLOW_DRIVER=exec")
	cmd := exec.Command(bin, "run", "lead.yaml")
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flow run: %v\n%s", err, out)
	}
	want := "lead heard: [scout did: -h] [scout did: --help] [scout did: --model x; -v]"
	if !strings.Contains(string(out), want) {
		t.Errorf("the output does not hold %q:\n%s", want, out)
	}
}

// TestDelegateCommandLine: outside a turn, `-h` or `--help` alone is the
// help; a task that looks like a flag is still a task (so the call fails
// for want of a turn, exit 1); a wrong count of arguments, or an option
// where AGENT goes, is a usage error (exit 2).
func TestDelegateCommandLine(t *testing.T) {
	bin := flowBinary(t)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FLOW_DELEGATE_") {
			env = append(env, kv)
		}
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--help"}, 0, "Usage:\n  flow delegate AGENT [--] TASK\n"},
		{[]string{"-h"}, 0, "Usage:\n  flow delegate AGENT [--] TASK\n"},
		{[]string{"scout", "-h"}, 1, "this is not a turn that may delegate"},
		{[]string{"scout", "--help"}, 1, "this is not a turn that may delegate"},
		{[]string{"scout", "--", "-x"}, 1, "this is not a turn that may delegate"},
		{[]string{"scout", "look", "at", "A"}, 2, "two arguments; got 4"},
		{[]string{"scout"}, 2, "two arguments; got 1"},
		{[]string{}, 2, "two arguments; got 0"},
		{[]string{"--model", "x", "scout"}, 2, `"--model" stands where AGENT goes`},
	} {
		cmd := exec.Command(bin, append([]string{"delegate"}, c.args...)...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code || !strings.Contains(string(out), c.want) {
			t.Errorf("flow delegate %q: exit %d, want %d with %q:\n%s", c.args, code, c.code, c.want, out)
		}
	}
}
