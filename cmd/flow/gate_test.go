package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/sweep"
)

// gateAgent decides a trial's success by its task: always, never, sixty
// (three trials in five, by a counter: 60%), killed (SIGKILL on every
// other start — an infrastructure failure — and a success otherwise);
// a candidate's prompt (the flow file gate-candidate.yaml) makes task b
// fail.
const gateAgent = `#!/usr/bin/env bash
turn=$(cat)
kind=$(printf '%s\n' "$turn" | sed -n 's/^Task: //p' | sed -n 1p)
echo 'FLOW_USAGE {"input": 100, "output": 10}' >&2
count() { n=$(cat "$STATE/$1" 2>/dev/null || echo 0); echo $((n+1)) > "$STATE/$1"; echo "$n"; }
case "$kind" in
  always) echo pass ;;
  never) echo fail ;;
  sixty) case $(( $(count sixty) % 5 )) in 0|2|4) echo pass ;; *) echo fail ;; esac ;;
  killed) if [ $(( $(count killed) % 2 )) = 0 ]; then kill -KILL $$; fi; echo pass ;;
  b) case "$turn" in *candidate*) echo fail ;; *) echo pass ;; esac ;;
  *) echo pass ;;
esac
`

func gateProject(t *testing.T, tasks string) *sweepDir {
	flow := `name: NAME
description: One agent whose success depends on its task.
agents: [./agents]
input: {kind: string}
sweep:
  score: solve.output == "pass"
nodes:
  - {id: solve, agent: a, prompt: "PROMPT\nTask: ${{ input.kind }}"}
`
	return newSweepDir(t, map[string]string{
		"agents/a.md":         "---\nname: a\ndescription: decides by its task\ndriver: exec\ncommand: [./a.sh]\n---\nAnswer.\n",
		"agents/a.sh":         gateAgent,
		"tasks.jsonl":         tasks,
		"gate.yaml":           strings.NewReplacer("NAME", "gate", "PROMPT", "Do the task.").Replace(flow),
		"gate-candidate.yaml": strings.NewReplacer("NAME", "gate-candidate", "PROMPT", "Do the task (candidate prompt).").Replace(flow),
	})
}

type gateJSON struct {
	Verdict string `json:"verdict"`
	Exit    int    `json:"exit"`
	Sweep   string `json:"sweep"`
	Ended   string `json:"ended"`
	Tasks   []struct {
		ID        string     `json:"id"`
		Verdict   string     `json:"verdict"`
		Trials    int        `json:"trials"`
		Successes int        `json:"successes"`
		Interval  [2]float64 `json:"interval"`
		PValue    float64    `json:"p_value"`
		Round     int        `json:"round"`
	} `json:"tasks"`
}

func readGateJSON(t *testing.T, out string) (gateJSON, map[string]int) {
	t.Helper()
	var g gateJSON
	start := strings.Index(out, "{\n")
	if start < 0 {
		t.Fatalf("no JSON in the output:\n%s", out)
	}
	dec := json.NewDecoder(strings.NewReader(out[start:]))
	if err := dec.Decode(&g); err != nil {
		t.Fatalf("reading the gate's JSON: %v\n%s", err, out)
	}
	at := map[string]int{}
	for i, task := range g.Tasks {
		at[task.ID] = i
	}
	return g, at
}

// TestGateThreeTasks is the acceptance: tasks passing 100%, 0% and 60%
// of the time against --min-success 0.8 --max-trials 20 — exit 1; the
// 100% task PASSes and the 0% task FAILs, each within 12 trials; the 60%
// task gets more trials than the 100% one; the JUnit report has three
// testcases, the 0% one failed with its counts and interval; the summary
// and a line per decided task are written.
func TestGateThreeTasks(t *testing.T) {
	d := gateProject(t, `{"id": "always", "kind": "always"}
{"id": "never", "kind": "never"}
{"id": "sixty", "kind": "sixty"}
`)
	out, code := d.flow("gate", "gate.yaml", "--inputs", "tasks.jsonl", "--min-success", "0.8", "--max-trials", "20",
		"--junit", "gate.xml", "--summary", "summary.md", "--json", "--concurrency", "3")
	if code != 1 {
		t.Fatalf("exit %d, want 1:\n%s", code, out)
	}
	g, at := readGateJSON(t, out)
	always, never, sixty := g.Tasks[at["always"]], g.Tasks[at["never"]], g.Tasks[at["sixty"]]
	if always.Verdict != "PASS" || always.Trials > 12 {
		t.Errorf("the 100%% task: %s after %d trials, want PASS within 12", always.Verdict, always.Trials)
	}
	if never.Verdict != "FAIL" || never.Trials > 12 {
		t.Errorf("the 0%% task: %s after %d trials, want FAIL within 12", never.Verdict, never.Trials)
	}
	if sixty.Trials <= always.Trials {
		t.Errorf("the 60%% task had %d trials, the 100%% task %d: want more", sixty.Trials, always.Trials)
	}
	if sixty.Verdict == "PASS" {
		t.Errorf("the 60%% task passed a bar of 0.8: %+v", sixty)
	}
	if g.Verdict != "FAIL" || g.Exit != 1 {
		t.Errorf("overall %s, exit %d", g.Verdict, g.Exit)
	}
	// The trials are a sweep's cells, and no task had more than it needed.
	s, err := sweep.Open(filepath.Join(d.dir, g.Sweep))
	if err != nil {
		t.Fatal(err)
	}
	counts := s.Snapshot().TaskCounts("")
	for _, task := range g.Tasks {
		if n := counts[task.ID]; n.Trials != task.Trials || n.Successes != task.Successes || n.Open != 0 {
			t.Errorf("task %s: the sweep has %+v, the gate says %d/%d", task.ID, n, task.Successes, task.Trials)
		}
	}
	// A line per task as it is decided, the decided ones first.
	if i, j := strings.Index(out, "FAIL never:"), strings.Index(out, "INCONCLUSIVE sixty:"); i < 0 || j < 0 || i > j {
		t.Errorf("the lines per task:\n%s", out)
	}

	var junit struct {
		Suites []struct {
			Cases []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
				Skipped *struct {
					Message string `xml:"message,attr"`
				} `xml:"skipped"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	b, err := os.ReadFile(filepath.Join(d.dir, "gate.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b, &junit); err != nil {
		t.Fatalf("gate.xml: %v\n%s", err, b)
	}
	if len(junit.Suites) != 1 || len(junit.Suites[0].Cases) != 3 {
		t.Fatalf("gate.xml: want one suite of three testcases:\n%s", b)
	}
	for _, c := range junit.Suites[0].Cases {
		switch {
		case c.Name == "never" && (c.Failure == nil || !strings.Contains(c.Failure.Message, "0/5 successes") || !strings.Contains(c.Failure.Message, "interval 0.00–0.43")):
			t.Errorf("the 0%% task's testcase: %+v\n%s", c.Failure, b)
		case c.Name != "never" && c.Failure != nil:
			t.Errorf("testcase %s failed: %s", c.Name, c.Failure.Message)
		case c.Name == "sixty" && c.Skipped == nil:
			t.Errorf("the 60%% task's testcase is not marked INCONCLUSIVE (skipped):\n%s", b)
		}
	}
	md, err := os.ReadFile(filepath.Join(d.dir, "summary.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| never | ❌ FAIL | 0/5 |") || !strings.Contains(string(md), "| always | ✅ PASS | 11/11 |") {
		t.Errorf("summary.md:\n%s", md)
	}
}

// TestGateInfrastructureIsNotATrial: a task whose agent is killed
// (SIGKILL) on every other start is run again each time, never counted:
// it passes 11 of 11, with a re-run behind each trial.
func TestGateInfrastructureIsNotATrial(t *testing.T) {
	d := gateProject(t, `{"id": "killed", "kind": "killed"}`+"\n")
	out, code := d.flow("gate", "gate.yaml", "--inputs", "tasks.jsonl", "--min-success", "0.8", "--json")
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	g, _ := readGateJSON(t, out)
	if task := g.Tasks[0]; task.Verdict != "PASS" || task.Trials != 11 || task.Successes != 11 {
		t.Fatalf("the task: %+v", task)
	}
	s, err := sweep.Open(filepath.Join(d.dir, g.Sweep))
	if err != nil {
		t.Fatal(err)
	}
	reruns := 0
	for _, c := range s.Snapshot().Cells {
		reruns += c.Reruns
	}
	if reruns != 11 {
		t.Errorf("%d re-runs over 11 trials, want 11", reruns)
	}
}

// TestGateBaselineWorseOnOneTask: against a sweep of ten runs a task on
// the old flow, a candidate whose prompt makes task b fail FAILs b and
// passes (or leaves open) a and c — from the sweep's recorded runs
// (--reuse) and from fresh runs of the baseline beside the candidate's.
func TestGateBaselineWorseOnOneTask(t *testing.T) {
	d := gateProject(t, `{"id": "a", "kind": "a"}
{"id": "b", "kind": "b"}
{"id": "c", "kind": "c"}
`)
	if out, code := d.flow("sweep", "gate.yaml", "--inputs", "tasks.jsonl", "--repeat", "10"); code != 0 {
		t.Fatalf("the baseline sweep: exit %d\n%s", code, out)
	}
	baseline := ".flow/sweeps" // a directory of sweeps: its newest, this one (a gate's trials are not there)
	for _, args := range [][]string{{"--reuse"}, nil} {
		out, code := d.flow(append([]string{"gate", "gate-candidate.yaml", "--inputs", "tasks.jsonl", "--baseline", baseline, "--json", "--concurrency", "3"}, args...)...)
		if code != 1 {
			t.Fatalf("%v: exit %d, want 1:\n%s", args, code, out)
		}
		g, at := readGateJSON(t, out)
		if b := g.Tasks[at["b"]]; b.Verdict != "FAIL" {
			t.Errorf("%v: task b %+v, want FAIL", args, b)
		}
		for _, id := range []string{"a", "c"} {
			if v := g.Tasks[at[id]].Verdict; v != "PASS" && v != "INCONCLUSIVE" {
				t.Errorf("%v: task %s %s, want PASS or INCONCLUSIVE", args, id, v)
			}
		}
		if args != nil && !strings.Contains(out, "its recorded runs") {
			t.Errorf("--reuse: the gate does not say it used the recorded runs:\n%s", out)
		}
	}
	if n := len(d.sweeps()); n != 1 {
		t.Errorf("%d sweeps in .flow/sweeps after the gates, want the baseline only", n)
	}
	// The same flow against its own baseline: nothing fails.
	out, code := d.flow("gate", "gate.yaml", "--inputs", "tasks.jsonl", "--baseline", baseline, "--reuse", "--json")
	if code == 1 {
		t.Fatalf("the baseline's own flow failed against it:\n%s", out)
	}
}

// TestGateBudget: under --budget-tokens 500, trials of 110 tokens each
// stop once the next one's forecast does not fit: the gate ends on the
// budget, its task INCONCLUSIVE, exit 3, the spending within the budget.
func TestGateBudget(t *testing.T) {
	d := gateProject(t, `{"id": "always", "kind": "always"}`+"\n")
	out, code := d.flow("gate", "gate.yaml", "--inputs", "tasks.jsonl", "--min-success", "0.8", "--budget-tokens", "500", "--json")
	if code != exitInconclusive {
		t.Fatalf("exit %d, want 3:\n%s", code, out)
	}
	g, _ := readGateJSON(t, out)
	if task := g.Tasks[0]; task.Verdict != "INCONCLUSIVE" || task.Trials != 4 || g.Ended != "budget" {
		t.Fatalf("the task: %+v, ended %s; want INCONCLUSIVE after 4 trials, on the budget", task, g.Ended)
	}
	if !strings.Contains(out, "not started: budget") {
		t.Errorf("the gate does not say the budget stopped it:\n%s", out)
	}
}

// TestGateOverCassettes: a gate over a recording runs offline — no
// agent process starts — and every trial is answered from it: a dry run
// of the CI wiring.
func TestGateOverCassettes(t *testing.T) {
	d := gateProject(t, "")
	if out, code := d.flow("test", "gate.yaml", "--record", "-i", "kind=sixty", "--cassette", "sixty.cassette"); code != 0 {
		t.Fatalf("recording: exit %d\n%s", code, out)
	}
	before, _ := os.ReadFile(filepath.Join(d.dir, "sixty"))
	out, code := d.flow("gate", "gate.yaml", "--cassette", "sixty.cassette", "--min-success", "0.8", "--json", "--junit", "gate.xml")
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	g, _ := readGateJSON(t, out)
	if task := g.Tasks[0]; task.ID != "sixty" || task.Verdict != "PASS" || task.Trials != 11 {
		t.Errorf("the task: %+v", task)
	}
	if after, _ := os.ReadFile(filepath.Join(d.dir, "sixty")); string(after) != string(before) {
		t.Errorf("the agent ran during the gate: its counter went from %q to %q", before, after)
	}
	// A turn the recording does not hold fails closed, and says so.
	out, code = d.flow("gate", "gate-candidate.yaml", "--cassette", "sixty.cassette", "--min-success", "0.8")
	if code != 1 || !strings.Contains(out, "does not match the recording") {
		t.Errorf("a candidate whose prompt changed, over the old recording: exit %d\n%s", code, out)
	}
}

// TestGateCommandLine: what cannot be a gate is exit 2, saying why.
func TestGateCommandLine(t *testing.T) {
	d := gateProject(t, `{"id": "always", "kind": "always"}`+"\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"gate", "gate.yaml"}, "needs --min-success P"},
		{[]string{"gate", "gate.yaml", "--min-success", "0.8", "--baseline", "x"}, "not both"},
		{[]string{"gate", "gate.yaml", "--min-success", "1.5"}, "--min-success 1.5"},
		{[]string{"gate", "gate.yaml", "--min-success", "0.1"}, "--margin 0.2 must be below --min-success 0.1"},
		{[]string{"gate", "gate.yaml", "--min-success", "0.8", "--alpha", "0"}, "--alpha 0"},
		{[]string{"gate", "gate.yaml", "--min-success", "0.8", "--reuse"}, "give --baseline SWEEP"},
		{[]string{"gate", "gate.yaml", "--inputs", "tasks.jsonl", "--baseline", "nowhere"}, "--baseline nowhere: no sweep there"},
		{[]string{"gate", "gate.yaml", "--min-success", "0.8", "--inputs", "missing.jsonl"}, "missing.jsonl"},
	} {
		out, code := d.flow(tc.args...)
		if code != 2 || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, want 2 saying %q:\n%s", tc.args, code, tc.want, out)
		}
	}
}
