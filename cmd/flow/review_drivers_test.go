package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/modelserver"
)

// driverSetup points a driver at the model server: the environment that
// configures it (FLOW_DRIVERS_*) and extra frontmatter for its agents. It
// skips the test when the driver's CLI is not installed.
func driverSetup(t *testing.T, driver, url string) (env []string, frontmatter string) {
	t.Helper()
	for _, dc := range driverCases {
		if dc.name == driver {
			return dc.env(agentCLI(t, driver), url), ""
		}
	}
	for _, sc := range serverCases {
		if sc.name == driver {
			env := sc.env(url)
			if sc.bin != "" {
				env = append(env, "FLOW_DRIVERS_"+strings.ToUpper(driver)+"_BINARY="+agentCLI(t, sc.bin))
			}
			return env, sc.agent(url)
		}
	}
	t.Fatalf("no test setup for driver %q", driver)
	return nil, ""
}

// The roles of the review example's agents, written into their bodies (the
// system prompt) so that the scripted server can tell their requests apart.
const (
	roleCoder    = "ROLE-CODER"
	roleReviewer = "ROLE-REVIEWER"
	roleWriter   = "ROLE-WRITER"
)

// reviewScript is the scripted model of the review example: the verdict
// turn rejects the first pass with one remark, "add a test", and approves
// the pass whose code answer says the test is in; the coder says so once it
// has read that remark. A verdict request is the reviewer's request that
// carries the engine's answer-format section (SPEC 3.3). Claude Code answers
// a typed turn through its StructuredOutput tool, then a closing text.
func reviewScript(driver string) func(modelserver.Request) modelserver.Reply {
	const (
		reject  = `{"approved": false, "remarks": ["add a test"]}`
		approve = `{"approved": true, "remarks": []}`
		first   = "Pass one: implemented the --version flag."
		second  = "Pass two: the test is in."
	)
	return func(r modelserver.Request) modelserver.Reply {
		b := string(r.Body)
		switch {
		case strings.Contains(b, roleCoder):
			// The remark as a JSON string inside the turn text (Codex's own
			// instructions say "add a test" unquoted).
			if strings.Contains(b, `\"add a test\"`) {
				return modelserver.Reply{Text: second}
			}
			return modelserver.Reply{Text: first}
		case strings.Contains(b, roleReviewer) && strings.Contains(b, "## Answer format"):
			verdict := reject
			if strings.Contains(b, second) {
				verdict = approve
			}
			if driver == "claude" {
				if strings.Contains(b, `"tool_result"`) {
					return modelserver.Reply{Text: "Verdict given."}
				}
				return modelserver.Reply{ToolCall: &modelserver.ToolCall{Name: "StructuredOutput", Arguments: verdict}}
			}
			return modelserver.Reply{Text: verdict}
		case strings.Contains(b, roleReviewer):
			return modelserver.Reply{Text: "- Mind the flag's help text."}
		case strings.Contains(b, roleWriter):
			return modelserver.Reply{Text: "Approved after two passes."}
		}
		return modelserver.Reply{Text: "ok"}
	}
}

// TestReviewExampleOnEachDriver runs examples/review.yaml as it is — the
// parallel reviewers, the coder's memory across the loop, the typed verdict
// — on each real driver against the scripted server, with agents of the
// example's names on that driver.
func TestReviewExampleOnEachDriver(t *testing.T) {
	t.Parallel()
	flow, err := os.ReadFile(filepath.Join("..", "..", "examples", "review.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, driver := range []string{"pi", "claude", "codex", "openai"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			s := modelserver.Start(t)
			s.Handle(reviewScript(driver))
			env, frontmatter := driverSetup(t, driver, s.URL())

			dir := t.TempDir()
			files := map[string]string{"review.yaml": string(flow), "go.mod": "module example.com/m\n"}
			for name, role := range map[string]string{"coder": roleCoder, "reviewer": roleReviewer, "writer": roleWriter} {
				files["agents/"+name+".md"] = "---\nname: " + name + "\ndescription: The review example's " + name +
					" on " + driver + "\ndriver: " + driver + "\nmodel: test-model\n" + frontmatter +
					"---\nYou are the " + name + " (" + role + "). Answer briefly.\n"
			}
			if err := os.MkdirAll(filepath.Join(dir, "agents"), 0o755); err != nil {
				t.Fatal(err)
			}
			for name, body := range files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(flowBinary(t), "run", "review.yaml")
			cmd.Dir = dir
			cmd.Env = append(append(os.Environ(), env...), "FLOW_TEST_MODEL_KEY="+cliKey, cleanHome(t))
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			start := time.Now()
			err := cmd.Run()
			t.Logf("%s: flow run review.yaml took %v", driver, time.Since(start))
			if err != nil {
				t.Fatalf("flow run: %v\n%s", err, out.String())
			}
			runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
			if len(runs) != 1 {
				t.Fatalf("run directories: %v\n%s", runs, out.String())
			}
			run := runs[0]

			facts, err := engine.ReadJournal(run)
			if err != nil {
				t.Fatal(err)
			}
			ended := map[string]engine.Fact{}
			for _, f := range facts {
				if f.Type == "end" && f.Visit != "" {
					ended[f.Visit] = f
				}
			}
			for _, visit := range []string{"reviews/correctness/correctness", "reviews/coverage/coverage", "reviews/style/style",
				"review#1/code", "review#1/tests", "review#1/verdict", "review#2/code", "review#2/verdict", "review", "report/done"} {
				if f, ok := ended[visit]; !ok || f.OK == nil || !*f.OK {
					t.Errorf("visit %s did not end ok: %+v\n%s", visit, f, out.String())
				}
			}
			if _, ok := ended["review#3/code"]; ok {
				t.Error("the loop ran a third pass after the approval")
			}
			if _, ok := ended["report/stuck"]; ok {
				t.Error("the run took the stuck branch")
			}
			verdicts := map[string]any{
				"review#1/verdict": map[string]any{"approved": false, "remarks": []any{"add a test"}},
				"review#2/verdict": map[string]any{"approved": true, "remarks": []any{}},
			}
			for visit, want := range verdicts {
				if got := jsonValue(ended[visit].Output); !reflect.DeepEqual(got, want) {
					t.Errorf("%s output = %#v, want %#v", visit, got, want)
				}
			}
			if got := ended["report/done"].Output; got != "Approved after two passes." {
				t.Errorf("report/done output = %#v", got)
			}

			// The coder's second pass continued its session: its request
			// carries the first pass's exchange.
			var coder string
			for _, r := range s.Requests() {
				if b := string(r.Body); strings.Contains(b, roleCoder) {
					coder = b
				}
			}
			for _, want := range []string{"Pass one: implemented the --version flag.", `\"add a test\"`} {
				if !strings.Contains(coder, want) {
					t.Errorf("the coder's last request lacks %q: memory: review did not continue its session", want)
				}
			}
			keyNowhere(t, run)
		})
	}
}

// jsonValue normalises a journal output to generic JSON values.
func jsonValue(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return v
	}
	return out
}
