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

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/rundir"
)

// cliKey is the fake key of these tests: it must appear in no file of a run.
const cliKey = "sk-flow-cli-test-9876543210"

// cleanHome is a HOME of the test's own for a `flow run` of the real CLIs:
// neither flow nor the CLIs then read the user's configuration or agents,
// and the shells Claude Code starts (its shell snapshot, its Bash tool) do
// not run the user's ~/.bashrc, whose side effects can stall a turn (a
// `pyenv rehash` waits 60 s on a lock another process left behind).
func cleanHome(t *testing.T) string {
	t.Helper()
	return "HOME=" + t.TempDir()
}

// driverCase is how one agent driver is pointed at the model server, and
// what the tests may expect of it.
type driverCase struct {
	name string
	bin  string // the CLI the driver runs, "" for none
	path string // the server endpoint the driver uses
	// env configures the driver through FLOW_DRIVERS_* (its binary aside).
	env func(url string) []string
	// agent is extra frontmatter of the test's agents, or nil.
	agent func(url string) string
	tool  *modelserver.ToolCall // a real tool call the CLI runs, nil for none
	auth  string                // the request header that carries the key
	turns int64                 // the turns a visit with a tool call reports
	cost  bool                  // the driver may report a cost; else it must not
	// ownRetries: the CLI retries a failed request on its own, one request
	// at a time, and the provider-failure test runs it with flow's default
	// bound on those retries (codex's bound is per request and per stream,
	// up to 4 requests: its test keeps the usual zero).
	ownRetries bool
}

var driverCases = []driverCase{
	{
		name: "pi", bin: "pi", path: "/v1/chat/completions",
		env: func(url string) []string {
			return []string{"FLOW_DRIVERS_PI_BASE_URL=" + url + "/v1", "FLOW_DRIVERS_PI_API_KEY_ENV=FLOW_TEST_MODEL_KEY",
				"FLOW_DRIVERS_PI_MAX_RETRIES=0"}
		},
		tool: &modelserver.ToolCall{Name: "ls", Arguments: `{"path":"."}`},
		auth: "Authorization", turns: 2, cost: true, ownRetries: true,
	},
	{
		name: "claude", bin: "claude", path: "/v1/messages",
		env: func(url string) []string {
			return []string{"FLOW_DRIVERS_CLAUDE_BASE_URL=" + url, "FLOW_DRIVERS_CLAUDE_API_KEY_ENV=FLOW_TEST_MODEL_KEY",
				"FLOW_DRIVERS_CLAUDE_MAX_RETRIES=0"}
		},
		tool: &modelserver.ToolCall{Name: "Bash", Arguments: `{"command":"ls","description":"list"}`},
		auth: "X-Api-Key", turns: 2, cost: true, ownRetries: true,
	},
	{
		// The server and key variable from flow's configuration.
		name: "codex", bin: "codex", path: "/v1/responses",
		env: func(url string) []string {
			return []string{"FLOW_DRIVERS_CODEX_BASE_URL=" + url, "FLOW_DRIVERS_CODEX_API_KEY_ENV=FLOW_TEST_MODEL_KEY",
				"FLOW_DRIVERS_CODEX_MAX_RETRIES=0"}
		},
		tool: &modelserver.ToolCall{Name: "exec_command", Arguments: `{"cmd":"ls"}`},
		auth: "Authorization", turns: 1, // codex sums the requests of its turn into one
	},
	{
		// The server and key variable from the agent's own frontmatter.
		name: "openai", path: "/v1/chat/completions",
		env:   func(string) []string { return nil },
		agent: func(url string) string { return "base_url: " + url + "/v1\napi_key_env: FLOW_TEST_MODEL_KEY\n" },
		auth:  "Authorization", turns: 1,
	},
}

// driverByName returns the case of a driver.
func driverByName(t *testing.T, name string) driverCase {
	t.Helper()
	for _, dc := range driverCases {
		if dc.name == name {
			return dc
		}
	}
	t.Fatalf("no test setup for driver %q", name)
	return driverCase{}
}

// setup points the driver at the model server: the environment that
// configures it (FLOW_DRIVERS_*) and extra frontmatter for its agents. A
// driver's CLI that is not installed skips the test (clitest.Missing).
func (dc driverCase) setup(t *testing.T, url string) (env []string, frontmatter string) {
	t.Helper()
	env = dc.env(url)
	if dc.bin != "" {
		env = append(env, "FLOW_DRIVERS_"+strings.ToUpper(dc.name)+"_BINARY="+clitest.Binary(t, dc.bin))
	}
	if dc.agent != nil {
		frontmatter = dc.agent(url)
	}
	return env, frontmatter
}

// flowRun writes files into a fresh directory, runs `flow run file` there
// with env added to the environment (and the fake key, and a clean HOME),
// and returns the run directory, the command's output and its exit error.
func flowRun(t *testing.T, files map[string]string, env []string, file string) (run, out string, err error) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(flowBinary(t), "run", file)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), env...), "FLOW_TEST_MODEL_KEY="+cliKey, cleanHome(t))
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	err = cmd.Run()
	t.Logf("flow run %s took %v", file, time.Since(start))
	runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("run directories: %v (flow run: %v)\n%s", runs, err, buf.String())
	}
	return runs[0], buf.String(), err
}

// runFlowResult runs the flow with a helper agent on the driver, against
// the model server, in a fresh directory that also holds marker.txt; it
// returns the run directory, the command's output and its exit error.
func runFlowResult(t *testing.T, dc driverCase, s *modelserver.Server, flow string) (run, out string, err error) {
	t.Helper()
	env, frontmatter := dc.setup(t, s.URL())
	agent := "---\nname: helper\ndescription: Helps with the test\ndriver: " + dc.name +
		"\nmodel: test-model\ntools: read, ls, bash\n" + frontmatter + "---\nYou help, briefly.\n"
	return flowRun(t, map[string]string{"agents/helper.md": agent, "f.yaml": flow, "marker.txt": "x"}, env, "f.yaml")
}

// runFlow is runFlowResult for a run that must succeed.
func runFlow(t *testing.T, dc driverCase, s *modelserver.Server, flow string) string {
	t.Helper()
	run, out, err := runFlowResult(t, dc, s, flow)
	if err != nil {
		t.Fatalf("flow run: %v\n%s", err, out)
	}
	return run
}

// eachDriver runs test in parallel on each driver.
func eachDriver(t *testing.T, test func(t *testing.T, dc driverCase)) {
	t.Parallel()
	for _, dc := range driverCases {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			test(t, dc)
		})
	}
}

// answers returns the outputs of the ended visits, by visit path.
func answers(t *testing.T, run string) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, f := range journal(t, run) {
		if f.Type == "end" && f.Visit != "" {
			out[f.Visit] = f.Output
		}
	}
	return out
}

// journal returns the facts of the run's journal.
func journal(t *testing.T, run string) []*record.Fact {
	t.Helper()
	facts, err := rundir.ReadJournal(run)
	if err != nil {
		t.Fatal(err)
	}
	return facts
}

// bodies returns the bodies of the requests to the driver's endpoint.
func bodies(s *modelserver.Server, dc driverCase) []string {
	var out []string
	for _, r := range s.Requests() {
		if r.Path == dc.path {
			out = append(out, string(r.Body))
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

// TestDriverTwoNodes: two visits of one agent, the second with a tool call
// where the driver has tools: the answers, the reported usage, the
// transcripts, the tool's result sent back, and the key sent but written
// nowhere.
func TestDriverTwoNodes(t *testing.T) {
	eachDriver(t, func(t *testing.T, dc driverCase) {
		replies := []modelserver.Reply{{Text: "Hello from the first node.", Input: 1234, Output: 5}}
		second, input := "I looked.", int64(200)
		if dc.tool != nil {
			replies = append(replies, modelserver.Reply{Text: "Listing.", ToolCall: dc.tool, Input: 100, Output: 10})
			second, input = "I listed marker.txt.", 300 // the two requests of the turn
		}
		replies = append(replies, modelserver.Reply{Text: second, Input: 200, Output: 6})
		s := modelserver.Start(t, replies...)
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
		if got["greet"] != "Hello from the first node." || got["look"] != second {
			t.Errorf("journal answers = %v", got)
		}
		var usage struct {
			Visits map[string]record.Usage `json:"visits"`
		}
		b, err := os.ReadFile(filepath.Join(run, "usage.json"))
		if err != nil || json.Unmarshal(b, &usage) != nil {
			t.Fatalf("usage.json: %v\n%s", err, b)
		}
		if u := usage.Visits["greet"]; u.Input == nil || *u.Input != 1234 {
			t.Errorf("usage of greet = %s, want the reported 1234 input tokens", b)
		}
		if u := usage.Visits["look"]; u.Input == nil || *u.Input != input || u.Turns == nil || *u.Turns != dc.turns {
			t.Errorf("usage of look = %s, want %d input tokens over %d turns", b, input, dc.turns)
		}
		if !dc.cost {
			for _, visit := range []string{"greet", "look"} {
				if usage.Visits[visit].Cost != nil {
					t.Errorf("usage of %s = %s, want no cost", visit, b)
				}
			}
		}
		for _, visit := range []string{"greet", "look"} {
			for _, ext := range []string{".jsonl", ".html"} {
				if _, err := os.Stat(filepath.Join(run, "home", visit, "helper"+ext)); err != nil {
					t.Errorf("transcript: %v", err)
				}
			}
		}
		if dc.tool != nil && !slices.ContainsFunc(bodies(s, dc), func(b string) bool { return strings.Contains(b, "marker.txt") }) {
			t.Error("the tool's result never reached the model")
		}
		for _, r := range s.Requests() {
			if h := r.Header.Get(dc.auth); r.Path == dc.path && h != cliKey && h != "Bearer "+cliKey {
				t.Errorf("%s was sent without the key in %s", r.Path, dc.auth)
			}
		}
		keyNowhere(t, run)
	})
}

// TestDriverMemoryAcrossLoop: `memory:` continues one session across two
// loop iterations — pi's and Claude Code's session, codex's thread (`codex
// exec resume`), openai's message history — so the second iteration's
// request carries the first exchange.
func TestDriverMemoryAcrossLoop(t *testing.T) {
	eachDriver(t, func(t *testing.T, dc driverCase) {
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
		reqs := bodies(s, dc)
		if len(reqs) != 2 {
			t.Fatalf("%d requests to %s, want 2", len(reqs), dc.path)
		}
		if strings.Contains(reqs[0], "Round one noted.") {
			t.Error("the first request already holds the first answer")
		}
		for _, want := range []string{"Round 1.", "Round one noted.", "Round 2."} {
			if !strings.Contains(reqs[1], want) {
				t.Errorf("the second turn's request lacks %q: the session was not continued", want)
			}
		}
		sessions := map[string]string{}
		for _, f := range journal(t, run) {
			if f.Type == "end" && strings.HasSuffix(f.Visit, "/talk") {
				sessions[f.Visit] = f.Session
			}
		}
		if s1 := sessions["rounds#1/talk"]; s1 == "" || sessions["rounds#2/talk"] != s1 {
			t.Errorf("sessions = %v, want one session for both iterations", sessions)
		}
		keyNowhere(t, run)
	})
}

// TestDriverProviderFailure: a server that answers 500 fails the visit with
// kind provider in under 30 s, after the first request and at most one
// retry. pi and Claude Code retry on their own (Claude Code 10 times by
// default, minutes against a 500); they run with flow's default bound on
// those retries, not the tests' usual zero.
func TestDriverProviderFailure(t *testing.T) {
	eachDriver(t, func(t *testing.T, dc driverCase) {
		if env := dc.env; dc.ownRetries {
			dc.env = func(url string) []string {
				return slices.DeleteFunc(env(url), func(e string) bool { return strings.Contains(e, "_MAX_RETRIES=") })
			}
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
		var kind string
		for _, f := range journal(t, run) {
			if f.Type == "end" && f.Visit == "greet" && f.Error != nil {
				kind = string(f.Error.Kind)
			}
		}
		if kind != "provider" {
			t.Errorf("greet failed with kind %q, want provider\n%s", kind, out)
		}
		generations := len(bodies(s, dc))
		t.Logf("%s: %d requests to %s", dc.name, generations, dc.path)
		if generations == 0 || generations > 2 {
			t.Errorf("%d requests to %s, want the first and at most one retry", generations, dc.path)
		}
		keyNowhere(t, run)
	})
}
