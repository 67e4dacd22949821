package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/internal/modelserver"
)

// preflightFlow has a first agent on the model server (openai) and a
// later one on the driver under test: a preflight that fails must fail
// before the first one has asked the server anything.
const preflightFlow = `name: f
agents: [./agents]
nodes:
  - {id: first, agent: first, prompt: Say ok.}
  - {id: later, agent: later, prompt: Say ok., on_fail: continue}
`

// preflightRun runs flow args in a fresh directory holding the flow and
// its two agents ($URL in later is the model server's), with env as the whole environment but HOME; it returns
// the output, the exit code and the run and sweep directories left.
func preflightRun(t *testing.T, later string, env []string, args ...string) (string, int, []string) {
	t.Helper()
	dir := t.TempDir()
	s := modelserver.Start(t)
	files := map[string]string{
		"f.yaml": preflightFlow,
		"agents/first.md": "---\nname: first\ndescription: d\ndriver: openai\nmodel: m\nbase_url: " + s.URL() +
			"/v1\napi_key_env: FLOW_TEST_MODEL_KEY\n---\nYou answer.\n",
		"agents/later.md": "---\nname: later\ndescription: d\n" + strings.ReplaceAll(later, "$URL", s.URL()) + "---\nYou answer.\n",
	}
	for name, body := range files {
		_ = os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(flowBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(env, "FLOW_TEST_MODEL_KEY="+cliKey, cleanHome(t))
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	code := 0
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	if n := len(s.Requests()); n != 0 && code == 2 {
		t.Errorf("the model server was asked %d time(s) before the preflight failed", n)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
	sweeps, _ := filepath.Glob(filepath.Join(dir, ".flow", "sweeps", "*"))
	return buf.String(), code, append(runs, sweeps...)
}

// TestPreflightMissingLaterDriverRunsNothing: a later agent's driver whose
// CLI is not on PATH is exit 2 before the first node runs, naming the
// agent, the driver and the fix; so is a server that takes no connections
// and an unset key variable. flow validate --preflight says the same, and
// flow sweep before its first cell.
func TestPreflightMissingLaterDriverRunsNothing(t *testing.T) {
	t.Parallel()
	noClaude := []string{"PATH=/usr/bin:/bin"} // claude lives in .tools only
	cases := []struct {
		name, later string
		want        []string
	}{
		{"no CLI", "driver: claude\n", []string{"agent later", "driver claude", "claude is not on PATH", "fix: install it (npm install -g @anthropic-ai/claude-code), or set drivers.claude.binary"}},
		{"refused", "driver: openai\nbase_url: http://127.0.0.1:1/v1\napi_key_env: FLOW_TEST_MODEL_KEY\n", []string{"agent later", "driver openai", "base_url http://127.0.0.1:1/v1 does not take connections", "connection refused"}},
		{"no key", "driver: openai\nbase_url: $URL/v1\napi_key_env: FLOW_NO_SUCH_KEY_SET\n", []string{"agent later", "driver openai", "the key variable FLOW_NO_SUCH_KEY_SET (api_key_env of agent later) is not set", "fix: export FLOW_NO_SUCH_KEY_SET="}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, args := range [][]string{{"run", "f.yaml"}, {"validate", "--preflight", "f.yaml"}, {"sweep", "f.yaml", "--model", "m"}} {
				out, code, runs := preflightRun(t, c.later, noClaude, args...)
				if code != exitInvalid {
					t.Fatalf("flow %s: exit %d, want 2\n%s", strings.Join(args, " "), code, out)
				}
				for _, w := range c.want {
					if !strings.Contains(out, w) {
						t.Errorf("flow %s does not say %q:\n%s", strings.Join(args, " "), w, out)
					}
				}
				if len(runs) != 0 {
					t.Errorf("flow %s left run directories %v", strings.Join(args, " "), runs)
				}
			}
		})
	}
}

// TestPreflightPassesAndSaysWhatItFound: with every driver there, flow
// validate --preflight names what it found and runs nothing, and flow run
// goes on.
func TestPreflightPassesAndSaysWhatItFound(t *testing.T) {
	t.Parallel()
	out, code, runs := preflightRun(t, "driver: exec\ncommand: [cat]\n", os.Environ(), "validate", "--preflight", "f.yaml")
	if code != 0 || !strings.Contains(out, "agent first (") || !strings.Contains(out, "takes connections") || len(runs) != 0 {
		t.Fatalf("flow validate --preflight: exit %d, runs %v\n%s", code, runs, out)
	}
}

// TestPreflightBeforeAResume: flow resume checks the drivers the rest of
// the run needs before it goes on; a server that went away is exit 2 and
// the run stays as it was, resumable.
func TestPreflightBeforeAResume(t *testing.T) {
	t.Parallel()
	s := modelserver.Start(t)
	dir := newcomerDir(t, map[string]string{
		"f.yaml": `name: f
agents:
  - {name: picky, description: d, driver: exec, command: [sh, -c, "cat >/dev/null; test -e ok && echo fine"]}
  - {name: later, description: d, driver: openai, model: m, base_url: "` + s.URL() + `/v1"}
nodes:
  - {id: first, agent: picky, prompt: go}
  - {id: second, agent: later, prompt: go}
`})
	out, code := flowAt(t, dir, "run", "f.yaml")
	if code != exitFailed {
		t.Fatalf("flow run: exit %d, want 1\n%s", code, out)
	}
	s.Close()
	if err := os.WriteFile(filepath.Join(dir, "ok"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out, code = flowAt(t, dir, "resume")
	if code != exitInvalid || !strings.Contains(out, "agent later") || !strings.Contains(out, "does not take connections") || strings.Contains(out, "resuming run") {
		t.Fatalf("flow resume with the later agent's server gone: exit %d\n%s", code, out)
	}
	if out, code := flowAt(t, dir, "show"); code != 0 || !strings.Contains(out, "failed at first") || strings.Contains(out, "second") || strings.Contains(out, "not resumable") {
		t.Fatalf("the run changed: flow show (exit %d):\n%s", code, out)
	}
}
