package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
)

// delegateFlow is a lead exec agent that delegates to a scout and a
// tester with `flow delegate`, and answers with what they said. Every
// turn reports its usage and appends its visit to ran.log.
const delegateFlow = `name: lead
agents:
  - name: lead
    description: sends a scout and a tester
    driver: exec
    command: [bash, -c, 'cat >/dev/null; echo "$FLOW_VISIT" >>ran.log; a=$(flow delegate scout "look at A") || exit 1; b=$(flow delegate tester "test B") || exit 1; echo "FLOW_USAGE {\"input\": 10, \"output\": 5}" >&2; echo "lead heard: $a | $b"']
  - name: scout
    description: looks
    driver: exec
    command: [bash, -c, 'task=$(head -1); echo "$FLOW_VISIT" >>ran.log; echo "FLOW_USAGE {\"input\": 3, \"output\": 2}" >&2; echo "scout on ${FLOW_MODEL:-default} did: $task"']
  - name: tester
    description: tests
    driver: exec
    command: [bash, -c, 'task=$(head -1); echo "$FLOW_VISIT" >>ran.log; if [ ! -e slow.once ] && [ -e slow ]; then touch slow.once; sleep 4646.1; fi; echo "FLOW_USAGE {\"input\": 4, \"output\": 1}" >&2; echo "tester did: $task"']
nodes:
  - id: lead
    agent: lead
    prompt: Find where the flaky test comes from.
    delegate: {agents: [scout, tester], max_children: 2}
`

func writeDelegateFlow(t *testing.T) (dir string, env []string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "lead.yaml"), []byte(delegateFlow), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := flowBinary(t)
	return dir, append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"), "FLOW_DRIVER=exec")
}

func onlyRun(t *testing.T, dir string) string {
	t.Helper()
	runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*"))
	if len(runs) != 1 {
		t.Fatalf("run directories: %v", runs)
	}
	return runs[0]
}

// TestDelegateExecAgents: a parent exec agent delegates to two children
// through `flow delegate` and finishes with their answers; the journal
// links each child to its parent, with its task; and the run's usage is
// the sum of its three turns'.
func TestDelegateExecAgents(t *testing.T) {
	dir, env := writeDelegateFlow(t)
	cmd := exec.Command(filepath.Join(pathDir(env), "flow"), "run", "lead.yaml")
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flow run: %v\n%s", err, out)
	}
	want := "lead heard: scout on default did: look at A | tester did: test B"
	if !strings.Contains(string(out), want) {
		t.Errorf("the output does not hold %q:\n%s", want, out)
	}
	run := onlyRun(t, dir)
	facts, err := rundir.ReadJournal(run)
	if err != nil {
		t.Fatal(err)
	}
	parents := map[string]string{}
	tasks := map[string]any{}
	var sum int64
	for _, f := range facts {
		if f.Type == record.FactStart && f.Parent != "" {
			parents[f.Visit], tasks[f.Visit] = f.Parent, f.Input
		}
		if f.Type == record.FactEnd && f.Usage != nil {
			sum += f.Usage.Tokens()
		}
	}
	if parents["lead/delegate:scout#1"] != "lead" || parents["lead/delegate:tester#1"] != "lead" || len(parents) != 2 {
		t.Errorf("children and parents: %v", parents)
	}
	if tasks["lead/delegate:scout#1"] != "look at A" || tasks["lead/delegate:tester#1"] != "test B" {
		t.Errorf("children's tasks: %v", tasks)
	}
	if sum != 15+5+5 {
		t.Errorf("the visits spent %d tokens, want 25", sum)
	}
	var u struct {
		Total struct {
			Input, Output int64
		} `json:"total"`
	}
	if b, err := os.ReadFile(filepath.Join(run, "usage.json")); err != nil {
		t.Error(err)
	} else if err := json.Unmarshal(b, &u); err != nil {
		t.Error(err)
	} else if u.Total.Input+u.Total.Output != sum {
		t.Errorf("usage.json's total is %+v, the turns spent %d:\n%s", u.Total, sum, b)
	}
	show := exec.Command(filepath.Join(pathDir(env), "flow"), "show", filepath.Base(run))
	show.Dir, show.Env = dir, env
	shown, err := show.CombinedOutput()
	if err != nil || !strings.Contains(string(shown), "(15 tokens; 25 with its delegates)") || !strings.Contains(string(shown), "\n  ✓ lead/delegate:scout#1") {
		t.Errorf("flow show does not draw the tree with its total (%v):\n%s", err, shown)
	}
	if b, err := os.ReadFile(filepath.Join(run, "report.html")); err != nil || !strings.Contains(string(b), "25 with its delegates") {
		t.Errorf("report.html does not give the tree's total (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(run, "delegate")); !os.IsNotExist(err) {
		t.Errorf("the delegation socket is left in the run directory: %v", err)
	}
	tail := exec.Command(filepath.Join(pathDir(env), "flow"), "tail", filepath.Base(run), "lead/delegate:scout#1")
	tail.Dir, tail.Env = dir, env
	if b, err := tail.CombinedOutput(); err != nil || !strings.Contains(string(b), `"answer":"scout on default did: look at A"`) {
		t.Errorf("the child's transcript, in its own home, does not read (%v):\n%s", err, b)
	}
	plan := exec.Command(filepath.Join(pathDir(env), "flow"), "plan", "lead.yaml")
	plan.Dir, plan.Env = dir, env
	if b, err := plan.CombinedOutput(); err != nil || !strings.Contains(string(b), "delegates to scout, tester: max_depth 1, max_children 2, concurrency 2") {
		t.Errorf("flow plan does not say the delegation (%v):\n%s", err, b)
	}
}

func pathDir(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if p, ok := strings.CutPrefix(env[i], "PATH="); ok {
			return strings.SplitN(p, string(os.PathListSeparator), 2)[0]
		}
	}
	return ""
}

// TestDelegateResumeAfterKill: the engine is killed (-9) while the second
// child runs; `flow resume` runs the parent's turn again, whose repeated
// call to the ended scout is answered from the journal without a turn,
// and the run completes.
func TestDelegateResumeAfterKill(t *testing.T) {
	dir, env := writeDelegateFlow(t)
	if err := os.WriteFile(filepath.Join(dir, "slow"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	flow := filepath.Join(pathDir(env), "flow")
	cmd := exec.Command(flow, "run", "lead.yaml")
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	deadline := time.Now().Add(30 * time.Second)
	// The tester's command line names the sleep before it runs: wait for
	// the file it touches first, so the resume finds it.
	for len(marked("4646.1")) == 0 || !exists(filepath.Join(dir, "slow.once")) {
		if time.Now().After(deadline) {
			t.Fatalf("the tester did not start:\n%s", stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	run := onlyRun(t, dir)

	resume := exec.Command(flow, "resume", filepath.Base(run))
	resume.Dir, resume.Env = dir, env
	out, err := resume.CombinedOutput()
	if err != nil {
		t.Fatalf("flow resume: %v\n%s", err, out)
	}
	if left := marked("4646.1"); len(left) > 0 {
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Errorf("the killed run's tester was left running: %v", left)
	}
	if want := "lead heard: scout on default did: look at A | tester did: test B"; !strings.Contains(string(out), want) {
		t.Errorf("the resumed run's output does not hold %q:\n%s", want, out)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "ran.log"))
	ran := strings.Fields(string(b))
	count := map[string]int{}
	for _, v := range ran {
		count[v]++
	}
	if count["lead/delegate:scout#1"] != 1 {
		t.Errorf("the ended scout ran %d times, want once: %v", count["lead/delegate:scout#1"], ran)
	}
	if count["lead"] != 2 || count["lead/delegate:tester#1"] != 2 {
		t.Errorf("the unended lead and tester should each run again once: %v", ran)
	}
	for v := range count {
		if strings.Contains(v, "#2") {
			t.Errorf("a repeated call started a new child %s: %v", v, ran)
		}
	}
}

// TestDelegateSweepAssign: a sweep's --assign reaches a delegated agent:
// each cell's scout runs on its own model.
func TestDelegateSweepAssign(t *testing.T) {
	dir, env := writeDelegateFlow(t)
	cmd := exec.Command(filepath.Join(pathDir(env), "flow"), "sweep", "lead.yaml", "--assign", "scout=m1,m2")
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flow sweep: %v\n%s", err, out)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "sweeps", "*", "cells", "*"))
	seen := map[string]bool{}
	for _, run := range runs {
		facts, err := rundir.ReadJournal(run)
		if err != nil {
			continue
		}
		for _, f := range facts {
			if f.Type == record.FactEnd && f.Visit == "lead/delegate:scout#1" {
				seen[f.Model] = true
				if s, _ := f.Output.(string); !strings.Contains(s, "scout on "+f.Model+" did") {
					t.Errorf("the scout on %s answered %q", f.Model, s)
				}
			}
		}
	}
	if !seen["m1"] || !seen["m2"] || len(seen) != 2 {
		t.Errorf("the delegated scouts ran on %v, want m1 and m2\n%s", seen, out)
	}
}

// TestDelegateRunawayProcesses is the runaway with real processes: an
// exec agent that delegates to itself at every level, five calls a turn.
// No child is deeper than max_depth or beyond max_children, every agent
// process that ran is a journaled visit (a refused call started none),
// and the children's spend stays within the budget plus one turn.
func TestDelegateRunawayProcesses(t *testing.T) {
	dir := t.TempDir()
	src := `name: runaway
agents:
  - name: looper
    description: delegates at every level
    driver: exec
    command: [bash, -c, 'cat >/dev/null; echo "$FLOW_VISIT" >>ran.log; if [ -n "$FLOW_DELEGATE_SOCKET" ]; then for i in 1 2 3 4 5; do flow delegate looper "dig $i" >/dev/null 2>>refused.log; done; fi; echo "FLOW_USAGE {\"input\": 100}" >&2; echo done']
nodes:
  - id: lead
    agent: looper
    prompt: Dig.
    delegate: {agents: [looper], max_depth: 2, max_children: 2, budget: {tokens: 500}}
`
	if err := os.WriteFile(filepath.Join(dir, "runaway.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := flowBinary(t)
	cmd := exec.Command(bin, "run", "runaway.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("flow run: %v\n%s", err, out)
	}
	facts, err := rundir.ReadJournal(onlyRun(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	visits, kids := 0, map[string]int{}
	var spend int64
	for _, f := range facts {
		if f.Type == record.FactStart && f.Kind == "agent" {
			visits++
		}
		if f.Type == record.FactStart && f.Parent != "" {
			kids[f.Parent]++
			if d := strings.Count(f.Visit, "/delegate:"); d > 2 {
				t.Errorf("%s is %d deep, past max_depth 2", f.Visit, d)
			}
		}
		if f.Type == record.FactEnd && strings.Contains(f.Visit, "/delegate:") && f.Usage != nil {
			spend += f.Usage.Tokens()
		}
	}
	for p, n := range kids {
		if n > 2 {
			t.Errorf("%s started %d children, past max_children 2", p, n)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "ran.log"))
	if ran := len(strings.Fields(string(b))); ran != visits {
		t.Errorf("%d agent processes ran for %d journaled visits:\n%s", ran, visits, b)
	}
	if spend > 500+100 {
		t.Errorf("the children spent %d tokens, past the budget 500 plus one turn", spend)
	}
	refused, _ := os.ReadFile(filepath.Join(dir, "refused.log"))
	if !strings.Contains(string(refused), "refused: max_children is 2") {
		t.Errorf("no call was refused for max_children:\n%s", refused)
	}
}

// TestDelegateInterrupt: Ctrl-C while a child runs ends the child, its
// parent and flow, which exits 130; the socket goes with the run.
func TestDelegateInterrupt(t *testing.T) {
	dir, env := writeDelegateFlow(t)
	if err := os.WriteFile(filepath.Join(dir, "slow"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(pathDir(env), "flow"), "run", "lead.yaml")
	cmd.Dir, cmd.Env = dir, env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	deadline := time.Now().Add(30 * time.Second)
	for len(marked("4646.1")) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the tester did not start:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	interrupt(t, cmd, &out)
	if left := marked("4646.1"); len(left) > 0 {
		for _, pid := range left {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Errorf("the child's process outlived the run: %v", left)
	}
	if _, err := os.Stat(filepath.Join(onlyRun(t, dir), "delegate")); !os.IsNotExist(err) {
		t.Errorf("the delegation socket is left in the run directory: %v", err)
	}
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
