package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/modelserver"
)

// cliKey is the fake key of these tests: it must appear in no file of a run.
const cliKey = "sk-flow-cli-test-9876543210"

// agentCLI returns the path of an agent CLI, from PATH or the repository's
// .tools, or skips the test.
func agentCLI(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	p, _ := filepath.Abs(filepath.Join("..", "..", ".tools", "node", "node_modules", ".bin", name))
	if _, err := os.Stat(p); err == nil {
		return p
	}
	t.Skipf("%s is not installed: not on PATH nor in .tools/node/node_modules/.bin (run `go tool task deps`)", name)
	return ""
}

// cleanHome is a HOME of the test's own for a `flow run` of the real CLIs:
// neither flow nor the CLIs then read the user's configuration or agents,
// and the shells Claude Code starts (its shell snapshot, its Bash tool) do
// not run the user's ~/.bashrc, whose side effects can stall a turn (a
// `pyenv rehash` waits 60 s on a lock another process left behind).
func cleanHome(t *testing.T) string {
	t.Helper()
	return "HOME=" + t.TempDir()
}

// driverCase is how one driver is pointed at the model server.
type driverCase struct {
	name string
	tool *modelserver.ToolCall // a real tool call the CLI runs
	path string                // the server endpoint the CLI uses
	env  func(bin, url string) []string
}

var driverCases = []driverCase{
	{
		name: "pi", tool: &modelserver.ToolCall{Name: "ls", Arguments: `{"path":"."}`}, path: "/v1/chat/completions",
		env: func(bin, url string) []string {
			return []string{"FLOW_DRIVERS_PI_BINARY=" + bin, "FLOW_DRIVERS_PI_BASE_URL=" + url + "/v1",
				"FLOW_DRIVERS_PI_API_KEY_ENV=FLOW_TEST_MODEL_KEY", "FLOW_DRIVERS_PI_MAX_RETRIES=0"}
		},
	},
	{
		name: "claude", tool: &modelserver.ToolCall{Name: "Bash", Arguments: `{"command":"ls","description":"list"}`}, path: "/v1/messages",
		env: func(bin, url string) []string {
			return []string{"FLOW_DRIVERS_CLAUDE_BINARY=" + bin, "FLOW_DRIVERS_CLAUDE_BASE_URL=" + url,
				"FLOW_DRIVERS_CLAUDE_API_KEY_ENV=FLOW_TEST_MODEL_KEY", "FLOW_DRIVERS_CLAUDE_MAX_RETRIES=0"}
		},
	},
}

// runFlow writes the flow and a helper agent on driver into a fresh
// directory, runs `flow run` there, and returns the run directory. The run
// must succeed.
func runFlow(t *testing.T, dc driverCase, s *modelserver.Server, flow string) string {
	t.Helper()
	run, out, err := runFlowResult(t, dc, s, flow)
	if err != nil {
		t.Fatalf("flow run: %v\n%s", err, out)
	}
	return run
}

// runFlowResult is runFlow for a run that may fail: it returns the run
// directory, the command's output and its exit error.
func runFlowResult(t *testing.T, dc driverCase, s *modelserver.Server, flow string) (run, out string, err error) {
	t.Helper()
	bin := agentCLI(t, dc.name)
	dir := t.TempDir()
	agent := "---\nname: helper\ndescription: Helps with the test\ndriver: " + dc.name +
		"\nmodel: test-model\ntools: read, ls, bash\n---\nYou help, briefly.\n"
	if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"agents/helper.md": agent, "f.yaml": flow, "marker.txt": "x"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(flowBinary(t), "run", "f.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), dc.env(bin, s.URL())...)
	cmd.Env = append(cmd.Env, "FLOW_TEST_MODEL_KEY="+cliKey, cleanHome(t))
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	err = cmd.Run()
	t.Logf("flow run took %v", time.Since(start))
	runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("run directories: %v (flow run: %v)\n%s", runs, err, buf.String())
	}
	return runs[0], buf.String(), err
}

// answers returns the outputs of the ended visits, by visit path.
func answers(t *testing.T, run string) map[string]any {
	t.Helper()
	facts, err := engine.ReadJournal(run)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for _, f := range facts {
		if f.Type == "end" && f.Visit != "" {
			out[f.Visit] = f.Output
		}
	}
	return out
}

// keyNowhere fails the test if the fake key is in any file of the run.
func keyNowhere(t *testing.T, run string) {
	t.Helper()
	_ = filepath.WalkDir(run, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(cliKey)) {
			t.Errorf("the API key is written in %s", path)
		}
		return nil
	})
}

func TestDriversTwoNodes(t *testing.T) {
	t.Parallel()
	for _, dc := range driverCases {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			s := modelserver.Start(t,
				modelserver.Reply{Text: "Hello from the first node.", Input: 1234, Output: 5},
				modelserver.Reply{ToolCall: dc.tool, Input: 100, Output: 10},
				modelserver.Reply{Text: "I listed marker.txt.", Input: 200, Output: 6})
			run := runFlow(t, dc, s, `name: f
agents: [./agents]
nodes:
  - id: greet
    agent: helper
    prompt: Say hello.
  - id: look
    agent: helper
    prompt: List the files with a tool.
`)
			got := answers(t, run)
			if got["greet"] != "Hello from the first node." || got["look"] != "I listed marker.txt." {
				t.Errorf("journal answers = %v", got)
			}
			var usage struct {
				Visits map[string]engine.Usage `json:"visits"`
			}
			b, err := os.ReadFile(filepath.Join(run, "usage.json"))
			if err != nil || json.Unmarshal(b, &usage) != nil {
				t.Fatalf("usage.json: %v\n%s", err, b)
			}
			if u := usage.Visits["greet"]; u.Input == nil || *u.Input != 1234 {
				t.Errorf("usage of greet = %s, want the reported 1234 input tokens", b)
			}
			if u := usage.Visits["look"]; u.Input == nil || *u.Input != 300 || u.Turns == nil || *u.Turns != 2 {
				t.Errorf("usage of look = %s, want 300 input tokens over 2 turns", b)
			}
			for _, visit := range []string{"greet", "look"} {
				for _, ext := range []string{".jsonl", ".html"} {
					if _, err := os.Stat(filepath.Join(run, "home", visit, "helper"+ext)); err != nil {
						t.Errorf("transcript: %v", err)
					}
				}
			}
			var toolResult bool
			for _, r := range s.Requests() {
				toolResult = toolResult || r.Path == dc.path && strings.Contains(string(r.Body), "marker.txt")
			}
			if !toolResult {
				t.Error("the tool's result never reached the model")
			}
			keyNowhere(t, run)
		})
	}
}

func TestDriversMemoryAcrossLoop(t *testing.T) {
	t.Parallel()
	for _, dc := range driverCases {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			s := modelserver.Start(t, modelserver.Reply{Text: "Round one noted."}, modelserver.Reply{Text: "Round two, after one."})
			run := runFlow(t, dc, s, `name: f
agents: [./agents]
nodes:
  - id: rounds
    loop:
      until: rounds.iteration >= 2
      max: 3
    do:
      - id: talk
        agent: helper
        memory: rounds
        prompt: Round ${{ rounds.iteration }}.
`)
			got := answers(t, run)
			if got["rounds#1/talk"] != "Round one noted." || got["rounds#2/talk"] != "Round two, after one." {
				t.Errorf("journal answers = %v", got)
			}
			var last string
			for _, r := range s.Requests() {
				if r.Path == dc.path {
					last = string(r.Body)
				}
			}
			for _, want := range []string{"Round 1.", "Round one noted.", "Round 2."} {
				if !strings.Contains(last, want) {
					t.Errorf("the second turn's request lacks %q: the session was not continued", want)
				}
			}
			keyNowhere(t, run)
		})
	}
}

// TestDriversProviderFailure: a server that answers 500 fails the visit
// with kind provider in under 30 s. pi and Claude Code retry on their own
// (Claude Code 10 times, minutes against a 500); this runs with flow's
// default bound on those retries, not the tests' usual zero.
func TestDriversProviderFailure(t *testing.T) {
	t.Parallel()
	for _, dc := range driverCases {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			env := dc.env
			dc.env = func(bin, url string) []string {
				return slices.DeleteFunc(env(bin, url), func(e string) bool { return strings.Contains(e, "_MAX_RETRIES=") })
			}
			s := modelserver.Start(t, modelserver.Reply{Status: 500})
			start := time.Now()
			run, out, err := runFlowResult(t, dc, s, `name: f
agents: [./agents]
nodes:
  - id: greet
    agent: helper
    prompt: Say hello.
`)
			took := time.Since(start)
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 1 {
				t.Fatalf("flow run = %v, want exit 1\n%s", err, out)
			}
			t.Logf("%s: 500 -> provider in %v", dc.name, took)
			if took > 30*time.Second {
				t.Errorf("a 500 took %v to fail the run, want under 30 s", took)
			}
			facts, err := engine.ReadJournal(run)
			if err != nil {
				t.Fatal(err)
			}
			var kind string
			for _, f := range facts {
				if f.Type == "end" && f.Visit == "greet" && f.Error != nil {
					kind = string(f.Error.Kind)
				}
			}
			if kind != "provider" {
				t.Errorf("greet failed with kind %q, want provider\n%s", kind, out)
			}
			var generations int
			for _, r := range s.Requests() {
				if r.Path == dc.path {
					generations++
				}
			}
			t.Logf("%s: %d requests to %s", dc.name, generations, dc.path)
			if generations == 0 || generations > 2 {
				t.Errorf("%d requests to %s, want the first and at most one retry", generations, dc.path)
			}
			keyNowhere(t, run)
		})
	}
}
