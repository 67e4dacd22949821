package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTailReadsLikeATranscript: flow tail shows an exec agent's typed
// answer as indented JSON, a run node's captured output, and for a visit
// the run does not have, the nearest ones; flow show --json gives every
// visit whole.
func TestTailReadsLikeATranscript(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	flow := `name: rounds
agents:
  - name: judge
    description: approves
    driver: exec
    command: [sh, -c, 'cat >/dev/null; echo "{\"approved\": true, \"remarks\": [\"first\", \"second\"]}"']
nodes:
  - id: rounds
    loop: {until: verdict.output.approved, max: 2}
    do:
      - {id: check, run: [echo, hello from the check]}
      - id: verdict
        agent: judge
        prompt: Judge.
        output: {approved: boolean, remarks: [string]}
`
	if err := os.WriteFile(filepath.Join(dir, "rounds.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := flowBinary(t)
	flowIn := func(args ...string) (string, int) {
		c := exec.Command(bin, args...)
		c.Dir = dir
		out, err := c.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	if out, code := flowIn("run", "rounds.yaml"); code != 0 {
		t.Fatalf("flow run: %d\n%s", code, out)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("runs: %v", runs)
	}
	id := filepath.Base(runs[0])

	// Rendered as on a terminal (--raw=false), since this is a pipe.
	out, code := flowIn("tail", "--raw=false", id, "rounds#1/verdict")
	if code != 0 || !strings.Contains(out, "answer:\n{\n  \"approved\": true,\n  \"remarks\": [\n    \"first\",") || strings.Contains(out, `\"approved\"`) {
		t.Errorf("flow tail of a typed answer is not indented JSON (exit %d):\n%s", code, out)
	}
	if raw, _ := flowIn("tail", id, "rounds#1/verdict"); !strings.Contains(raw, `\"approved\"`) {
		t.Errorf("flow tail into a pipe is not the JSON line as written:\n%s", raw)
	}

	out, code = flowIn("tail", id, "rounds#1/check")
	if code != 0 || !strings.Contains(out, "hello from the check\n(exit 0)") {
		t.Errorf("flow tail of a run node does not show its output (exit %d):\n%s", code, out)
	}

	out, code = flowIn("tail", id, "rounds/verdict")
	if code != exitInvalid || !strings.Contains(out, "did you mean rounds#1/verdict?") {
		t.Errorf("flow tail of a wrong visit suggests nothing (exit %d):\n%s", code, out)
	}

	out, code = flowIn("show", id, "--json")
	var shown struct {
		ID     string `json:"id"`
		Status string `json:"status"`
		Visits []struct {
			Visit, Status string
			Output        any
		} `json:"visits"`
	}
	if err := json.Unmarshal([]byte(out), &shown); err != nil || code != 0 {
		t.Fatalf("flow show --json (exit %d): %v\n%s", code, err, out)
	}
	found := false
	for _, v := range shown.Visits {
		if v.Visit == "rounds#1/verdict" {
			o, _ := v.Output.(map[string]any)
			found = v.Status == "ok" && o["approved"] == true
		}
	}
	if shown.ID != id || shown.Status != "succeeded" || !found {
		t.Errorf("flow show --json: %+v", shown)
	}
}

// TestReadableTurn: a CLI driver's turn reads as its prompt, its steps and
// its typed answer; the raw stream lines of an ended turn are left out, a
// running turn's kept.
func TestReadableTurn(t *testing.T) {
	lines := []string{
		`{"flow_turn_start":{"visit":"review#1/verdict","driver":"claude","model":"m","prompt":"Judge."}}`,
		`{"type":"stream_event","event":{"delta":"x"}}`,
		`{"flow_turn":{"visit":"review#1/verdict","status":"completed","steps":[{"kind":"tool","title":"Bash","text":"{\"command\":\"ls\"}"},{"kind":"result","text":"a\nb"}],"answer":"{\"approved\": true, \"remarks\": []}"}}`,
		`{"flow_turn_start":{"visit":"review#2/verdict","driver":"claude","prompt":"Again."}}`,
		`{"type":"stream_event","event":{"delta":"still running"}}`,
	}
	got := readable(strings.Join(lines, "\n") + "\n")
	want := "── turn of review#1/verdict (claude, m)\nprompt:\nJudge.\n→ Bash {\"command\":\"ls\"}\n← a b\nanswer:\n{\n  \"approved\": true,\n  \"remarks\": []\n}\n── completed\n" +
		"── turn of review#2/verdict (claude)\nprompt:\nAgain.\n" + lines[4] + "\n"
	if got != want {
		t.Errorf("readable:\n%s\nwant:\n%s", got, want)
	}
}
