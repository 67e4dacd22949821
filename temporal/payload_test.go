package temporal

import (
	"strings"
	"testing"

	"github.com/flowrun/flow/schema"
)

// A command whose input would pass Temporal's payload limit fails at
// once, saying why, and runs no activity; a short one beside it runs.
// (Prompts the engine bounds itself, at limits.prompt_bytes.)
func TestWorkflowACommandTooLongToTravelFailsItsVisit(t *testing.T) {
	h := newHarness(t, &scripted{})
	out, facts := h.run(`name: f
input: {big: string}
`+testAgents+`nodes:
  - {id: long, run: [echo, "${{ input.big }}"], on_fail: continue}
  - {id: short, agent: worker, prompt: hi}
`, map[string]any{"big": strings.Repeat("x", maxLeafInput+1)})
	if !out.OK {
		t.Fatalf("the run failed: %+v", out.Failure)
	}
	expectEnds(t, facts, map[string]string{"long": string(schema.FailUnavailable), "short": "ok"})
	for _, f := range facts {
		if f.Visit == "long" && f.Error != nil && !strings.Contains(f.Error.Message, "more than a visit carries on Temporal") {
			t.Errorf("the failure says %q, not why", f.Error.Message)
		}
	}
}
