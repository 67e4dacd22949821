package flows

import (
	"encoding/json"
	"testing"

	"github.com/flowrun/flow/flows/osdisk"
)

// TestScoreEval: a score reads the top-level nodes' values as a run
// leaves them in values.json — numbers decoded as float64 — and gives a
// boolean or a number in [0, 1].
func TestScoreEval(t *testing.T) {
	load := func(score string) *Score {
		t.Helper()
		p, diags := LoadSource("s.yaml", []byte(`name: s
agents:
  - {name: judge, description: d, driver: exec, command: [x]}
sweep: {score: '`+score+`'}
nodes:
  - {id: tests, run: [go, test]}
  - {id: verdict, agent: judge, output: {approved: boolean, grade: number}, prompt: p}
`), Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		return p.Root.Sweep.Score
	}
	var values map[string]any
	if err := json.Unmarshal([]byte(`{"input": "", "tests": {"ok": true, "output": {"passed": true, "exit": 0, "report": ""}},
		"verdict": {"ok": true, "output": {"approved": false, "grade": 0.75}}}`), &values); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		score   string
		want    float64
		numeric bool
		bad     bool
	}{
		{score: "tests.output.exit == 0 && tests.output.passed", want: 1},
		{score: "verdict.output.approved", want: 0},
		{score: "verdict.output.grade", want: 0.75, numeric: true},
		{score: "verdict.output.grade * 2", bad: true},
	}
	for _, tt := range tests {
		got, numeric, err := load(tt.score).Eval(values)
		if (err != nil) != tt.bad || !tt.bad && (got != tt.want || numeric != tt.numeric) {
			t.Errorf("%s: %v %v %v, want %v %v (error %v)", tt.score, got, numeric, err, tt.want, tt.numeric, tt.bad)
		}
	}
}
