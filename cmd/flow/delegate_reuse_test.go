package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
)

// delegChildren are the delegated children a run's journal records: each
// child's path, with its parent and its task.
func delegChildren(t *testing.T, run string) map[string]string {
	t.Helper()
	facts, err := rundir.ReadJournal(run)
	if err != nil {
		t.Fatal(err)
	}
	kids := map[string]string{}
	for _, f := range facts {
		if f.Type == record.FactStart && f.Parent != "" {
			task, _ := f.Input.(string)
			kids[f.Visit] = f.Parent + " | " + task
		}
	}
	return kids
}

var wantChildren = map[string]string{"lead/delegate:scout#1": "lead | look at A", "lead/delegate:tester#1": "lead | test B"}

func sameChildren(got map[string]string) bool {
	if len(got) != len(wantChildren) {
		return false
	}
	for k, v := range wantChildren {
		if got[k] != v {
			return false
		}
	}
	return true
}

// TestDelegateRunReuse: flow run --reuse of a flow whose lead delegates
// answers the lead from the first run, and first repeats its two delegate
// calls, so the children run again as visits of the new run, each
// answered from the first run too: no agent process starts, the new
// journal holds the same children (paths, parent, task), and all three
// turns' usage is saved.
func TestDelegateRunReuse(t *testing.T) {
	dir, env := writeDelegateFlow(t)
	runs := t.TempDir()
	flow := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(pathDir(env), "flow"), args...)
		cmd.Dir, cmd.Env = dir, append(env, "FLOW_RUNS_DIR="+runs)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("flow %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	flow("run", "lead.yaml")
	first, _ := filepath.Glob(filepath.Join(runs, "*"))
	if len(first) != 1 || !sameChildren(delegChildren(t, first[0])) {
		t.Fatalf("the first run's children: %v in %v", delegChildren(t, first[0]), first)
	}
	if err := os.Remove(filepath.Join(dir, "ran.log")); err != nil {
		t.Fatal(err)
	}
	out := flow("run", "--reuse", "lead.yaml")
	if !strings.Contains(out, "lead heard: scout on default did: look at A | tester did: test B") {
		t.Errorf("the reused run's answer:\n%s", out)
	}
	if !strings.Contains(out, "reused 3 visit(s), saving 25 tokens") {
		t.Errorf("flow run --reuse does not say it saved the three turns' 25 tokens:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "ran.log")); !os.IsNotExist(err) {
		t.Errorf("an agent process started (%v):\n%s", err, b)
	}
	all, _ := filepath.Glob(filepath.Join(runs, "*"))
	var second string
	for _, r := range all {
		if r != first[0] {
			second = r
		}
	}
	if second == "" {
		t.Fatalf("no second run in %v", all)
	}
	if got := delegChildren(t, second); !sameChildren(got) {
		t.Errorf("the reused run's children are %v, want %v", got, wantChildren)
	}
}

// TestFlowTestDelegation: flow test --record keeps a delegating flow's
// cassette, with its children's starts; flow test replays it offline, in
// a copy at another path with no agent able to run, the lead's delegate
// calls repeated and its children answered from the cassette; and an
// edited child agent fails the test naming the child's visit.
func TestFlowTestDelegation(t *testing.T) {
	dir, env := writeDelegateFlow(t)
	rec := exec.Command(filepath.Join(pathDir(env), "flow"), "test", "--record", "lead.yaml")
	rec.Dir, rec.Env = dir, append(env, "FLOW_RUNS_DIR="+t.TempDir())
	if out, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("flow test --record: %v\n%s", err, out)
	}
	moved := t.TempDir()
	if out, err := exec.Command("cp", "-r", filepath.Join(dir, "lead.yaml"), filepath.Join(dir, "lead.cassette"), moved).CombinedOutput(); err != nil {
		t.Fatalf("copying: %v\n%s", err, out)
	}
	o := newOffline(t)
	bin := flowBinary(t)
	runs := t.TempDir()
	test := func() (string, error) {
		c := o.command(t, bin, moved, "test", "lead.yaml")
		c.Env = append(c.Env, "FLOW_TESTS_DIR="+runs, "FLOW_DRIVER=exec") // flow test runs in tests_dir
		out, err := c.CombinedOutput()
		return string(out), err
	}
	out, err := test()
	if err != nil || !strings.Contains(out, "passed") {
		t.Fatalf("flow test: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(moved, "ran.log")); !os.IsNotExist(err) {
		t.Errorf("an agent process started: %v", err)
	}
	replayed, _ := filepath.Glob(filepath.Join(runs, "*"))
	if len(replayed) != 1 {
		t.Fatalf("flow test's runs: %v", replayed)
	}
	if got := delegChildren(t, replayed[0]); !sameChildren(got) {
		t.Errorf("flow test's run has the children %v, want %v", got, wantChildren)
	}
	p := filepath.Join(moved, "lead.yaml")
	b, _ := os.ReadFile(p)
	edited := strings.Replace(string(b), `echo "scout on`, `echo "the scout on`, 1)
	if edited == string(b) {
		t.Fatal("the scout's command is not in the flow")
	}
	if err := os.WriteFile(p, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = test()
	if err == nil || !strings.Contains(out, "lead/delegate:scout#1 does not match the recording") {
		t.Errorf("flow test of an edited child agent (%v):\n%s", err, out)
	}
}

// nestedFlow is a lead that sends a scout, which sends a tester: a tree
// two deep.
const nestedFlow = `name: nested
agents:
  - name: lead
    description: sends a scout
    driver: exec
    command: [bash, -c, 'cat >/dev/null; echo "$FLOW_VISIT" >>ran.log; a=$(flow delegate scout "look at A") || exit 1; echo "lead heard: $a"']
  - name: scout
    description: looks, and sends a tester
    driver: exec
    command: [bash, -c, 'task=$(head -1); echo "$FLOW_VISIT" >>ran.log; b=$(flow delegate tester "test $task") || exit 1; echo "scout did $task, $b"']
  - name: tester
    description: tests
    driver: exec
    command: [bash, -c, 'task=$(head -1); echo "$FLOW_VISIT" >>ran.log; echo "tester did: $task"']
nodes:
  - id: lead
    agent: lead
    prompt: Look.
    delegate: {agents: [scout, tester], max_depth: 2}
`

// TestDelegateRunReuseNested: children of children are replayed by the
// same rule: flow run --reuse of a tree two deep starts no agent process
// and journals the grandchild under the child, with its task.
func TestDelegateRunReuseNested(t *testing.T) {
	dir, env := writeDelegateFlow(t)
	if err := os.WriteFile(filepath.Join(dir, "nested.yaml"), []byte(nestedFlow), 0o644); err != nil {
		t.Fatal(err)
	}
	runs := t.TempDir()
	flow := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(filepath.Join(pathDir(env), "flow"), args...)
		cmd.Dir, cmd.Env = dir, append(env, "FLOW_RUNS_DIR="+runs)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("flow %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	flow("run", "nested.yaml")
	os.Remove(filepath.Join(dir, "ran.log"))
	out := flow("run", "--reuse", "nested.yaml")
	if !strings.Contains(out, "lead heard: scout did look at A, tester did: test look at A") || !strings.Contains(out, "reused 3 visit(s)") {
		t.Errorf("flow run --reuse:\n%s", out)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "ran.log")); !os.IsNotExist(err) {
		t.Errorf("an agent process started (%v):\n%s", err, b)
	}
	all, _ := filepath.Glob(filepath.Join(runs, "*"))
	for _, r := range all {
		want := map[string]string{"lead/delegate:scout#1": "lead | look at A",
			"lead/delegate:scout#1/delegate:tester#1": "lead/delegate:scout#1 | test look at A"}
		if got := delegChildren(t, r); len(got) != 2 || got["lead/delegate:scout#1"] != want["lead/delegate:scout#1"] ||
			got["lead/delegate:scout#1/delegate:tester#1"] != want["lead/delegate:scout#1/delegate:tester#1"] {
			t.Errorf("%s: the children are %v, want %v", filepath.Base(r), got, want)
		}
	}
	if len(all) != 2 {
		t.Errorf("runs: %v", all)
	}
}
