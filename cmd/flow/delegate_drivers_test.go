package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/delegatetest"
	"github.com/flowrun/flow/internal/modelserver"
)

// TestDelegateDrivers: on every driver, a lead agent delegates to two
// children (an exec scout, and a helper on the lead's own driver) through
// the delegate tool, gets their answers and finishes; the journal links
// each child to the lead, and the run's usage is what its turns spent.
func TestDelegateDrivers(t *testing.T) {
	eachDriver(t, func(t *testing.T, dc driverCase) {
		s := modelserver.Start(t)
		lead := delegatetest.Script("The lead heard both.",
			delegatetest.Call{Args: `{"agent":"scout","task":"look at A"}`, Marker: "scout-answer-17"},
			delegatetest.Call{Args: `{"agent":"helper","task":"look at B"}`, Marker: "helper-answer-31"})
		s.Handle(func(r modelserver.Request) modelserver.Reply {
			if delegatetest.ToolName(r) == "" { // the helper's turn: it may not delegate
				return modelserver.Reply{Text: "helper-answer-31 looked at B"}
			}
			return lead(r)
		})
		env, frontmatter := dc.setup(t, s.URL())
		agent := func(name string) string {
			a := "  - name: " + name + "\n    description: a " + name + "\n    driver: " + dc.name + "\n    model: test-model\n"
			for _, l := range strings.Split(strings.TrimSpace(frontmatter), "\n") {
				if l != "" {
					a += "    " + l + "\n"
				}
			}
			return a
		}
		flow := `name: f
agents:
` + agent("lead") + agent("helper") + `  - name: scout
    description: looks
    driver: exec
    command: [bash, -c, 'task=$(head -1); echo "scout-answer-17 did: $task"']
nodes:
  - id: lead
    agent: lead
    prompt: Find where the flaky test comes from.
    delegate: {agents: [scout, helper]}
`
		run, out, err := flowRun(t, map[string]string{"f.yaml": flow}, env, "f.yaml")
		if err != nil {
			t.Fatalf("flow run: %v\n%s", err, out)
		}
		if got := answers(t, run); got["lead"] != "The lead heard both." || got["lead/delegate:scout#1"] != "scout-answer-17 did: look at A" ||
			got["lead/delegate:helper#1"] != "helper-answer-31 looked at B" {
			t.Errorf("answers = %v", got)
		}
		parents := map[string]string{}
		var sum int64
		for _, f := range journal(t, run) {
			if f.Type == record.FactStart && f.Parent != "" {
				parents[f.Visit] = f.Parent
			}
			if f.Type == record.FactEnd && f.Usage != nil {
				sum += f.Usage.Tokens()
			}
		}
		if len(parents) != 2 || parents["lead/delegate:scout#1"] != "lead" || parents["lead/delegate:helper#1"] != "lead" {
			t.Errorf("children and parents: %v", parents)
		}
		var u struct {
			Total struct{ Input, Output, CacheRead, CacheWrite int64 } `json:"total"`
		}
		b, err := os.ReadFile(filepath.Join(run, "usage.json"))
		if err != nil || json.Unmarshal(b, &u) != nil {
			t.Fatalf("usage.json: %v\n%s", err, b)
		}
		total := u.Total.Input + u.Total.Output + u.Total.CacheRead + u.Total.CacheWrite
		if total != sum || sum != s.Billed() {
			t.Errorf("usage.json's total %d, the turns' %d, the server billed %d: %+v\n%s", total, sum, s.Billed(), s.Bills(), out)
			for _, f := range journal(t, run) {
				if f.Type == record.FactEnd && f.Usage != nil {
					t.Logf("%s: %d (%+v)", f.Visit, f.Usage.Tokens(), *f.Usage)
				}
			}
		}
		if strings.Contains(out, "no delegate tool") {
			t.Errorf("the lead was not offered the tool:\n%s", out)
		}
	})
}
