package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/modelserver"
)

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
// carries the engine's answer-format section (docs/flow-files.md, agent). Claude Code answers
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
	for _, dc := range driverCases {
		driver := dc.name
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			s := modelserver.Start(t)
			s.Handle(reviewScript(driver))
			env, frontmatter := dc.setup(t, s.URL())

			files := map[string]string{"review.yaml": string(flow), "go.mod": "module example.com/m\n"}
			for name, role := range map[string]string{"coder": roleCoder, "reviewer": roleReviewer, "writer": roleWriter} {
				files["agents/"+name+".md"] = "---\nname: " + name + "\ndescription: The review example's " + name +
					" on " + driver + "\ndriver: " + driver + "\nmodel: test-model\n" + frontmatter +
					"---\nYou are the " + name + " (" + role + "). Answer briefly.\n"
			}
			run, out, err := flowRun(t, files, env, "review.yaml")
			if err != nil {
				t.Fatalf("flow run: %v\n%s", err, out)
			}

			ended := map[string]*record.Fact{}
			for _, f := range journal(t, run) {
				if f.Type == "end" && f.Visit != "" {
					ended[f.Visit] = f
				}
			}
			for _, visit := range []string{"reviews/correctness/correctness", "reviews/coverage/coverage", "reviews/style/style",
				"review#1/code", "review#1/tests", "review#1/verdict", "review#2/code", "review#2/verdict", "review", "report/done"} {
				if f, ok := ended[visit]; !ok || f.OK == nil || !*f.OK {
					t.Errorf("visit %s did not end ok: %+v\n%s", visit, f, out)
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
