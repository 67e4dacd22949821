package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/delegatetest"
	"github.com/flowrun/flow/internal/devserver"
	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/rundir"
)

// delegateTemporalFlow is delegateFlow logging where each visit starts
// (its worker's pid) and ends, the tester slow the first time, under a
// budget for the tree and one for the run.
const delegateTemporalFlow = `name: lead
budget: {tokens: 40}
agents:
  - name: lead
    description: sends a scout and a tester
    driver: exec
    command: [bash, -c, 'cat >/dev/null; echo "start $FLOW_VISIT $PPID" >>ran; a=$(flow delegate scout "look at A") || exit 1; b=$(flow delegate tester "test B") || exit 1; echo "FLOW_USAGE {\"input\": 10, \"output\": 5}" >&2; echo "end $FLOW_VISIT" >>ran; echo "lead heard: $a | $b"']
  - name: scout
    description: looks
    driver: exec
    command: [bash, -c, 'task=$(head -1); echo "start $FLOW_VISIT $PPID" >>ran; echo "FLOW_USAGE {\"input\": 3, \"output\": 2}" >&2; echo "end $FLOW_VISIT" >>ran; echo "scout did: $task"']
  - name: tester
    description: tests
    driver: exec
    command: [bash, -c, 'task=$(head -1); echo "start $FLOW_VISIT $PPID" >>ran; if [ ! -e slow.once ]; then touch slow.once; sleep 6; fi; echo "FLOW_USAGE {\"input\": 4, \"output\": 1}" >&2; echo "end $FLOW_VISIT" >>ran; echo "tester did: $task"']
nodes:
  - id: lead
    agent: lead
    prompt: Find where the flaky test comes from.
    delegate: {agents: [scout, tester], max_children: 2, budget: {tokens: 12}}
`

// TestTemporalDelegationSurvivesAKilledWorker: a delegating flow runs on
// Temporal with two workers; the worker of the parent's turn is killed
// (-9) while its second child runs. The parent's turn runs again on the
// other worker, and its repeated calls are answered by the children the
// first attempt started: each child ends once, no call starts a new
// child, the tree spends within its budgets, and the journal draws it as
// a local run's.
func TestTemporalDelegationSurvivesAKilledWorker(t *testing.T) {
	srv := devserver.Start(t)
	dir, env := writeDelegateFlow(t)
	if err := os.WriteFile(filepath.Join(dir, "lead.yaml"), []byte(delegateTemporalFlow), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(pathDir(env), "flow")
	path := []string{env[len(env)-2]} // the PATH with the flow binary first
	// The two workers share a runs directory, as two started in one
	// checkout do: each serves its own turns' calls.
	shared := t.TempDir()
	w1 := startWorkerEnv(t, bin, dir, srv.Address, "deleg", path, "--runs-dir", shared)
	w2 := startWorkerEnv(t, bin, dir, srv.Address, "deleg", path, "--runs-dir", shared)
	runsDir := t.TempDir()
	run := exec.Command(bin, "run", "--temporal", srv.Address, "--task-queue", "deleg", "lead.yaml")
	run.Dir, run.Env = dir, append(temporalEnv(runsDir), path...)
	var out bytes.Buffer
	run.Stdout, run.Stderr = &out, &out
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = run.Process.Kill() }()
	log := filepath.Join(dir, "ran")
	var victim string
	deadline := time.Now().Add(60 * time.Second)
	for {
		starts, _ := sideEffects(t, log)
		if len(starts["lead/delegate:tester#1"]) > 0 && len(starts["lead"]) > 0 {
			victim = starts["lead"][0]
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the tester never started:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	killed, survivor := w1, w2
	if fmt.Sprint(w2.Process.Pid) == victim {
		killed, survivor = w2, w1
	}
	if err := killed.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := run.Wait(); err != nil {
		t.Fatalf("the run did not complete after the parent's worker died: %v\n%s", err, out.String())
	}
	if want := "lead heard: scout did: look at A | tester did: test B"; !strings.Contains(out.String(), want) {
		t.Errorf("the output does not hold %q:\n%s", want, out.String())
	}
	starts, ends := sideEffects(t, log)
	t.Logf("visits started on workers %v", starts)
	for _, v := range []string{"lead", "lead/delegate:scout#1", "lead/delegate:tester#1"} {
		if ends[v] != 1 {
			t.Errorf("visit %s ended %d times, want once (started on %v)", v, ends[v], starts[v])
		}
	}
	if n := len(starts["lead/delegate:scout#1"]); n != 1 {
		t.Errorf("the scout, which ended before the kill, ran %d times", n)
	}
	if got := starts["lead"]; len(got) != 2 || got[1] != fmt.Sprint(survivor.Process.Pid) {
		t.Errorf("the parent's turn started on workers %v, want %s then the survivor %d", got, victim, survivor.Process.Pid)
	}
	for v := range starts {
		if strings.Contains(v, "#2") {
			t.Errorf("a repeated call started a new child %s: %v", v, starts)
		}
	}
	runDir, o := runOutcome(t, runsDir)
	if o.Status != record.StatusSucceeded {
		t.Errorf("the mirrored run is %s, want succeeded", o.Status)
	}
	facts, err := rundir.ReadJournal(runDir)
	if err != nil {
		t.Fatal(err)
	}
	parents := map[string]string{}
	var sum, kids int64
	for _, f := range facts {
		if f.Type == record.FactStart && f.Parent != "" {
			parents[f.Visit] = f.Parent
		}
		if f.Type == record.FactEnd && f.Usage != nil {
			sum += f.Usage.Tokens()
			if strings.Contains(f.Visit, "/delegate:") {
				kids += f.Usage.Tokens()
			}
		}
	}
	if len(parents) != 2 || parents["lead/delegate:scout#1"] != "lead" || parents["lead/delegate:tester#1"] != "lead" {
		t.Errorf("children and parents in the journal: %v", parents)
	}
	if sum != 25 || kids > 12 {
		t.Errorf("the tree spent %d tokens, its children %d; want 25 within the run's 40, and 10 within the delegation's 12", sum, kids)
	}
	var u struct {
		Total struct{ Input, Output int64 } `json:"total"`
	}
	if b, err := os.ReadFile(filepath.Join(runDir, "usage.json")); err != nil || json.Unmarshal(b, &u) != nil || u.Total.Input+u.Total.Output != sum {
		t.Errorf("usage.json's total %+v is not the turns' %d (%v)", u.Total, sum, err)
	}
	show, err := temporalFlow(t, bin, dir, runsDir, "show", filepath.Base(runDir))
	if err != nil || !strings.Contains(show, "25 with its delegates)") || !strings.Contains(show, "lead/delegate:tester#1") {
		t.Errorf("flow show does not draw the tree with its total (%v):\n%s", err, show)
	}
}

// TestServeTemporalRefusesOnlyWhatCannotRun: flow serve --temporal runs a
// delegating flow on the workers (its id answers, and the run succeeds),
// and refuses a flow that cannot run there — an isolated scope whose
// repository has no remote — with a 400 that says why, before any run
// exists; flow validate --temporal says the same of each.
func TestServeTemporalRefusesOnlyWhatCannotRun(t *testing.T) {
	srv := devserver.Start(t)
	env := gitEnv(t)
	dir := repoWith(t, env, map[string]string{
		"flows/d.yaml":   confDelegateFlow,
		"flows/iso.yaml": "name: iso\nnodes:\n  - id: w\n    isolation: worktree\n    run: echo hi\n",
		".gitignore":     ".flow/\n",
	})
	bin := flowBinary(t)
	path := "PATH=" + filepath.Dir(bin) + string(os.PathListSeparator) + os.Getenv("PATH")
	startWorkerEnv(t, bin, dir, srv.Address, "served", []string{path})
	if out, err := flowIn(t, env, dir, "validate", "--temporal", srv.Address, "flows/d.yaml"); err != nil || !strings.Contains(out, "flows/d.yaml: ok") {
		t.Errorf("flow validate --temporal of a delegating flow: %v\n%s", err, out)
	}
	out, err := flowIn(t, env, dir, "validate", "--temporal", srv.Address, "flows/iso.yaml")
	const why = `isolation: worktree on Temporal needs a remote the workers can reach`
	if code := exitCode(err); code != 2 || !strings.Contains(out, why) {
		t.Errorf("flow validate --temporal of an isolated flow without a remote: exit %d\n%s", code, out)
	}

	s := startServe(t, bin, dir, "--temporal", srv.Address, "--task-queue", "served")
	code, m := s.call("POST", "/api/flows/iso/runs", "")
	if msg, _ := m["error"].(string); code != http.StatusBadRequest || !strings.Contains(fmt.Sprint(m), why) {
		t.Errorf("POST /api/flows/iso/runs: %d %v (%s), want 400 saying %q", code, m, msg, why)
	}
	if runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", "*")); len(runs) != 0 {
		t.Errorf("a refused start made run directories: %v", runs)
	}
	code, m = s.call("POST", "/api/flows/d/runs", "")
	id, _ := m["id"].(string)
	if code != http.StatusAccepted || id == "" {
		t.Fatalf("POST /api/flows/d/runs: %d %v", code, m)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		code, m = s.call("GET", "/api/runs/"+id, "")
		if code != http.StatusOK {
			t.Fatalf("GET /api/runs/%s: %d %v\n%s", id, code, m, s.stderr.String())
		}
		if m["status"] == string(record.StatusSucceeded) {
			break
		}
		if m["status"] != string(record.StatusRunning) || time.Now().After(deadline) {
			t.Fatalf("the served delegating run is %v, want it to succeed\n%s", m["status"], s.stderr.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	runs, _ := filepath.Glob(filepath.Join(dir, ".flow", "runs", id))
	if len(runs) != 1 || !journalSays(runs[0], "lead heard: scouted-it") {
		t.Errorf("the served run's lead did not hear its scout (%v)", runs)
	}
}

func journalSays(run, text string) bool {
	b, _ := os.ReadFile(filepath.Join(run, "journal.jsonl"))
	return strings.Contains(string(b), text)
}

// TestTemporalDelegationOnTheOpenAIDriver: an openai lead, whose tool loop
// flow owns on the worker, delegates to an exec scout and to a helper on
// its own driver, on Temporal; the scripted model server bills the tree,
// and what it billed is the run's usage, within the run's budget.
func TestTemporalDelegationOnTheOpenAIDriver(t *testing.T) {
	srv := devserver.Start(t)
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
	const budget = 5000
	agent := func(name string) string {
		return "  - {name: " + name + ", description: a " + name + ", driver: openai, model: test-model, base_url: " + s.URL() + "/v1, api_key_env: FLOW_TEST_MODEL_KEY}\n"
	}
	flow := fmt.Sprintf("name: f\nbudget: {tokens: %d}\nagents:\n", budget) + agent("lead") + agent("helper") +
		"  - {name: scout, description: looks, driver: exec, command: [bash, -c, 'task=$(head -1); echo \"scout-answer-17 did: $task\"']}\n" +
		"nodes:\n  - {id: lead, agent: lead, prompt: Find where the flaky test comes from., delegate: {agents: [scout, helper]}}\n"
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.yaml"), []byte(flow), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := flowBinary(t)
	key := []string{"FLOW_TEST_MODEL_KEY=" + cliKey}
	startWorkerEnv(t, bin, dir, srv.Address, "openai", key)
	runsDir := t.TempDir()
	run := exec.Command(bin, "run", "--temporal", srv.Address, "--task-queue", "openai", "f.yaml")
	run.Dir, run.Env = dir, append(temporalEnv(runsDir), key...)
	if out, err := run.CombinedOutput(); err != nil {
		t.Fatalf("flow run --temporal: %v\n%s", err, out)
	}
	runDir, o := runOutcome(t, runsDir)
	if o.Status != record.StatusSucceeded {
		t.Fatalf("the run is %s", o.Status)
	}
	if got := answers(t, runDir); got["lead"] != "The lead heard both." || got["lead/delegate:scout#1"] != "scout-answer-17 did: look at A" ||
		got["lead/delegate:helper#1"] != "helper-answer-31 looked at B" {
		t.Errorf("answers = %v", got)
	}
	var u struct {
		Total struct{ Input, Output, CacheRead, CacheWrite int64 } `json:"total"`
	}
	b, err := os.ReadFile(filepath.Join(runDir, "usage.json"))
	if err != nil || json.Unmarshal(b, &u) != nil {
		t.Fatalf("usage.json: %v\n%s", err, b)
	}
	total := u.Total.Input + u.Total.Output + u.Total.CacheRead + u.Total.CacheWrite
	if billed := s.Billed(); total != billed || billed == 0 || billed > budget {
		t.Errorf("usage.json's total %d, the server billed %d, the budget is %d", total, billed, budget)
	}
}
