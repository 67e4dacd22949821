package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/modelserver"
)

// serverCase is how the openai or codex driver reaches the model server.
type serverCase struct {
	name string
	// agent is extra frontmatter of the helper agent.
	agent func(url string) string
	// env configures the driver through FLOW_DRIVERS_*.
	env  func(url string) []string
	path string // the endpoint the driver uses
	bin  string // the CLI it needs, "" for none
	tool *modelserver.ToolCall
}

var serverCases = []serverCase{
	{
		// The server and key variable from the agent's own frontmatter.
		name:  "openai",
		agent: func(url string) string { return "base_url: " + url + "/v1\napi_key_env: FLOW_TEST_MODEL_KEY\n" },
		env:   func(string) []string { return nil },
		path:  "/v1/chat/completions",
	},
	{
		// The server and key variable from flow's configuration.
		name:  "codex",
		agent: func(string) string { return "" },
		env: func(url string) []string {
			return []string{"FLOW_DRIVERS_CODEX_BASE_URL=" + url, "FLOW_DRIVERS_CODEX_API_KEY_ENV=FLOW_TEST_MODEL_KEY",
				"FLOW_DRIVERS_CODEX_MAX_RETRIES=0"}
		},
		path: "/v1/responses",
		bin:  "codex",
		tool: &modelserver.ToolCall{Name: "exec_command", Arguments: `{"cmd":"ls"}`},
	},
}

// runServerFlow writes the flow and a helper agent into a fresh directory,
// runs `flow run` there and returns the run directory, the command's
// output and its exit error.
func runServerFlow(t *testing.T, sc serverCase, s *modelserver.Server, flow string) (run, out string, err error) {
	t.Helper()
	env := sc.env(s.URL())
	if sc.bin != "" {
		bin := agentCLI(t, sc.bin)
		env = append(env, "FLOW_DRIVERS_"+strings.ToUpper(sc.name)+"_BINARY="+bin)
	}
	dir := t.TempDir()
	agent := "---\nname: helper\ndescription: Helps with the test\ndriver: " + sc.name +
		"\nmodel: test-model\ntools: read, ls, bash\n" + sc.agent(s.URL()) + "---\nYou help, briefly.\n"
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
	cmd.Env = append(os.Environ(), env...)
	cmd.Env = append(cmd.Env, "FLOW_TEST_MODEL_KEY="+cliKey, cleanHome(t))
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	start := time.Now()
	err = cmd.Run()
	t.Logf("flow run took %v", time.Since(start))
	runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("run directories: %v\n%s", runs, buf.String())
	}
	return runs[0], buf.String(), err
}

func TestServerDriversTwoNodes(t *testing.T) {
	t.Parallel()
	for _, sc := range serverCases {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			replies := []modelserver.Reply{{Text: "Hello from the first node.", Input: 1234, Output: 5}}
			second := "I looked."
			if sc.tool != nil {
				replies = append(replies, modelserver.Reply{Text: "Listing.", ToolCall: sc.tool, Input: 100, Output: 10})
				second = "I listed marker.txt."
			}
			replies = append(replies, modelserver.Reply{Text: second, Input: 200, Output: 6})
			s := modelserver.Start(t, replies...)
			run, out, err := runServerFlow(t, sc, s, `name: f
agents: [./agents]
nodes:
  - id: greet
    agent: helper
    prompt: Say hello.
  - id: look
    agent: helper
    prompt: Look at the files.
`)
			if err != nil {
				t.Fatalf("flow run: %v\n%s", err, out)
			}
			got := answers(t, run)
			if got["greet"] != "Hello from the first node." || got["look"] != second {
				t.Errorf("journal answers = %v", got)
			}
			var usage struct {
				Visits map[string]engine.Usage `json:"visits"`
			}
			b, err := os.ReadFile(filepath.Join(run, "usage.json"))
			if err != nil || json.Unmarshal(b, &usage) != nil {
				t.Fatalf("usage.json: %v\n%s", err, b)
			}
			if u := usage.Visits["greet"]; u.Input == nil || *u.Input != 1234 || u.Cost != nil {
				t.Errorf("usage of greet = %s, want the reported 1234 input tokens and no cost", b)
			}
			want := int64(200)
			if sc.tool != nil {
				want = 300 // codex sums the two requests of its turn
			}
			if u := usage.Visits["look"]; u.Input == nil || *u.Input != want {
				t.Errorf("usage of look = %s, want %d input tokens", b, want)
			}
			for _, visit := range []string{"greet", "look"} {
				for _, ext := range []string{".jsonl", ".html"} {
					if _, err := os.Stat(filepath.Join(run, "home", visit, "helper"+ext)); err != nil {
						t.Errorf("transcript: %v", err)
					}
				}
			}
			if sc.tool != nil {
				var toolResult bool
				for _, r := range s.Requests() {
					toolResult = toolResult || r.Path == sc.path && strings.Contains(string(r.Body), "marker.txt")
				}
				if !toolResult {
					t.Error("the tool's result never reached the model")
				}
			}
			for _, r := range s.Requests() {
				if r.Path == sc.path && r.Header.Get("Authorization") != "Bearer "+cliKey {
					t.Errorf("%s was sent without the key", r.Path)
				}
			}
			keyNowhere(t, run)
		})
	}
}

func TestServerDriversProviderFailure(t *testing.T) {
	t.Parallel()
	for _, sc := range serverCases {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			s := modelserver.Start(t, modelserver.Reply{Status: 500})
			start := time.Now()
			run, out, err := runServerFlow(t, sc, s, `name: f
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
			t.Logf("%s: 500 -> provider in %v", sc.name, took)
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
			keyNowhere(t, run)
		})
	}
}

// TestServerDriversMemoryAcrossLoop: `memory:` continues one session across
// two loop iterations — for openai the message history, for codex the
// thread (`codex exec resume`) — so the second iteration's request carries
// the first exchange.
func TestServerDriversMemoryAcrossLoop(t *testing.T) {
	t.Parallel()
	for _, sc := range serverCases {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			s := modelserver.Start(t, modelserver.Reply{Text: "Round one noted."}, modelserver.Reply{Text: "Round two, after one."})
			run, out, err := runServerFlow(t, sc, s, `name: f
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
			if err != nil {
				t.Fatalf("flow run: %v\n%s", err, out)
			}
			got := answers(t, run)
			if got["rounds#1/talk"] != "Round one noted." || got["rounds#2/talk"] != "Round two, after one." {
				t.Errorf("journal answers = %v", got)
			}
			var bodies []string
			for _, r := range s.Requests() {
				if r.Path == sc.path {
					bodies = append(bodies, string(r.Body))
				}
			}
			if len(bodies) != 2 {
				t.Fatalf("%d requests to %s, want 2", len(bodies), sc.path)
			}
			if strings.Contains(bodies[0], "Round one noted.") {
				t.Error("the first request already holds the first answer")
			}
			for _, want := range []string{"Round 1.", "Round one noted.", "Round 2."} {
				if !strings.Contains(bodies[1], want) {
					t.Errorf("the second turn's request lacks %q: the session was not continued", want)
				}
			}
			var facts []engine.Fact
			if facts, err = engine.ReadJournal(run); err != nil {
				t.Fatal(err)
			}
			sessions := map[string]string{}
			for _, f := range facts {
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
}
