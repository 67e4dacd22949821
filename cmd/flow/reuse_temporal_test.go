package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/devserver"
	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/rundir"
)

// editedFlow: b reads a, c reads b, d reads nothing; every turn on the
// openai driver of the model server.
const editedFlow = `name: chain
agents:
  - {name: writer, description: writes, driver: openai, model: test-model, base_url: %URL%/v1, api_key_env: FLOW_TEST_MODEL_KEY}
nodes:
  - {id: a, agent: writer, prompt: Alpha.}
  - {id: b, agent: writer, prompt: Beta one., reads: [a]}
  - {id: c, agent: writer, prompt: Gamma., reads: [b]}
  - {id: d, agent: writer, prompt: Delta.}
`

// editedModel answers editedFlow's turns, saying what each read, and
// counts the requests of each node.
type editedModel struct {
	mu    sync.Mutex
	asked map[string]int
}

func (m *editedModel) reply(r modelserver.Request) modelserver.Reply {
	body := string(r.Body)
	node, text := "", ""
	switch {
	case strings.Contains(body, "Gamma."):
		node, text = "c", "gamma read beta-"+said(body, "beta-")
	case strings.Contains(body, "Beta one."):
		node, text = "b", "beta-one"
	case strings.Contains(body, "Beta two."):
		node, text = "b", "beta-two"
	case strings.Contains(body, "Alpha."):
		node, text = "a", "alpha-answer"
	default:
		node, text = "d", "delta-answer"
	}
	m.mu.Lock()
	m.asked[node]++
	m.mu.Unlock()
	return modelserver.Reply{Text: text}
}

func (m *editedModel) take() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	got := m.asked
	m.asked = map[string]int{}
	return got
}

// TestReuseOnTemporalAfterAPromptEdit: a flow run here, then, after one
// node's prompt is edited, run again with --reuse --temporal: the
// unchanged visits are answered from this machine's recording in the
// workflow (no request reaches the model server for them, and no worker
// runs them), the edited node and what reads it run on the worker; the
// mirrored journal marks the reused visits as a local reuse does (flow
// show says "reused from RUN"), and flow plan --reuse --temporal said so
// before.
func TestReuseOnTemporalAfterAPromptEdit(t *testing.T) {
	clitest.Tool(t, "temporal")
	srv := devserver.Start(t)
	s := modelserver.Start(t)
	m := &editedModel{asked: map[string]int{}}
	s.Handle(m.reply)
	d := newSweepDir(t, map[string]string{"chain.yaml": strings.ReplaceAll(editedFlow, "%URL%", s.URL())})
	flow := func(args ...string) string { t.Helper(); return d.mustFlow(t, args...) }
	flow("run", "chain.yaml")
	if got := m.take(); got["a"] != 1 || got["b"] != 1 || got["c"] != 1 || got["d"] != 1 {
		t.Fatalf("the recording's requests: %v", got)
	}
	recorded := filepath.Base(newestRun(t, filepath.Join(d.dir, "runs")))

	file := filepath.Join(d.dir, "chain.yaml")
	b, _ := os.ReadFile(file)
	if err := os.WriteFile(file, []byte(strings.Replace(string(b), "Beta one.", "Beta two.", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	queue := "reuse-" + filepath.Base(d.dir)
	on := []string{"--temporal", srv.Address, "--task-queue", queue}
	plan := flow(append([]string{"plan", "--reuse"}, append(on, "chain.yaml")...)...)
	for _, want := range []string{"2 of 4 visits reused, 2 run", "reuse  a  (from " + recorded + "/a)", "run    b  prompt changed",
		"run    c  reads `b` which re-runs", "reuse  d  (from " + recorded + "/d)"} {
		if !strings.Contains(plan, want) {
			t.Errorf("flow plan --reuse --temporal does not say %q:\n%s", want, plan)
		}
	}

	startWorkerEnv(t, d.bin, d.dir, srv.Address, queue, []string{"FLOW_TEST_MODEL_KEY=" + cliKey})
	out := flow(append([]string{"run", "--reuse"}, append(on, "chain.yaml")...)...)
	if got := m.take(); got["a"] != 0 || got["d"] != 0 || got["b"] != 1 || got["c"] != 1 {
		t.Errorf("flow run --reuse --temporal sent %v; want b and c once each, nothing for a and d\n%s", got, out)
	}
	run := newestRun(t, filepath.Join(d.dir, "runs"))
	if got := answers(t, run); got["a"] != "alpha-answer" || got["b"] != "beta-two" || got["c"] != "gamma read beta-two" || got["d"] != "delta-answer" {
		t.Errorf("answers = %v", got)
	}
	for _, f := range journal(t, run) {
		if f.Type != record.FactEnd || f.Visit == "" {
			continue
		}
		switch f.Visit {
		case "a", "d":
			if f.Reused == nil || f.Reused.Run != recorded || f.Reused.Visit != f.Visit || f.Worker != "" {
				t.Errorf("%s: reused %+v, worker %q; want reused from %s/%s, on no worker", f.Visit, f.Reused, f.Worker, recorded, f.Visit)
			}
		default:
			if f.Reused != nil || f.Worker == "" {
				t.Errorf("%s: reused %+v, worker %q; want it run on a worker", f.Visit, f.Reused, f.Worker)
			}
		}
	}
	if show := flow("show", run); !strings.Contains(show, "reused from "+recorded) {
		t.Errorf("flow show does not say the visits were reused from %s:\n%s", recorded, show)
	}
}

// TestReuseThroughTheTreeOnTemporal is TestReuseThroughTheTree with the
// runs after the recording on Temporal: after the scout's instructions
// are edited, flow plan --reuse --temporal names the scout, the lead and
// the report as runs; flow run --reuse --temporal runs exactly those (the
// scout once), reuses other, and leaves no stale answer. A second run
// reuses the whole tree: the workflow makes the lead's recorded call
// again, the scout is answered from its recording, and nothing is sent.
func TestReuseThroughTheTreeOnTemporal(t *testing.T) {
	clitest.Tool(t, "temporal")
	srv := devserver.Start(t)
	s := modelserver.Start(t)
	m := &treeModel{asked: map[string]int{}}
	s.Handle(m.reply)
	d := treeDir(t, s)
	flow := func(args ...string) string { t.Helper(); return d.mustFlow(t, args...) }
	flow("run", "tree.yaml")
	if got := m.take(); got["lead"] != 2 || got["scout"] != 1 || got["report"] != 1 || got["other"] != 1 {
		t.Fatalf("the first run's requests: %v", got)
	}
	scout := filepath.Join(d.dir, "agents", "scout.md")
	b, _ := os.ReadFile(scout)
	if err := os.WriteFile(scout, []byte(strings.Replace(string(b), "Version one.", "Version two.", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	queue := "tree-" + filepath.Base(d.dir)
	on := []string{"--temporal", srv.Address, "--task-queue", queue}
	plan := flow(append([]string{"plan", "--reuse"}, append(on, "tree.yaml")...)...)
	for _, want := range []string{"1 of 4 visits reused, 3 run",
		"run    lead  its child lead/delegate:scout#1 runs again",
		"run    lead/delegate:scout#1  the agent file changed",
		"run    report  reads `lead` which re-runs",
		"reuse  other"} {
		if !strings.Contains(plan, want) {
			t.Errorf("flow plan --reuse --temporal after the scout's instructions changed does not say %q:\n%s", want, plan)
		}
	}

	startWorkerEnv(t, d.bin, d.dir, srv.Address, queue, []string{"FLOW_TEST_MODEL_KEY=" + cliKey})
	out := flow(append([]string{"run", "--reuse"}, append(on, "tree.yaml")...)...)
	if got := m.take(); got["scout"] != 1 || got["lead"] != 2 || got["report"] != 1 || got["other"] != 0 {
		t.Errorf("flow run --reuse --temporal sent %v; want the scout once, the lead's two requests and the report's one\n%s", got, out)
	}
	run := newestRun(t, filepath.Join(d.dir, "runs"))
	if got := answers(t, run); got["lead/delegate:scout#1"] != "scout-says: two" || got["lead"] != "lead heard two" || got["report"] != "report of: lead heard two" {
		t.Errorf("stale answers after the scout changed: %v", got)
	}
	if got := treeReused(t, run); len(got) != 1 || !got["other"] {
		t.Errorf("reused visits %v; want only other", got)
	}

	if out := flow(append([]string{"plan", "--reuse"}, append(on, "tree.yaml")...)...); !strings.Contains(out, "4 of 4 visits reused, 0 run") {
		t.Errorf("flow plan --reuse --temporal after the run:\n%s", out)
	}
	out = flow(append([]string{"run", "--reuse"}, append(on, "tree.yaml")...)...)
	if got := m.take(); len(got) != 0 {
		t.Errorf("a run of the unchanged tree with --reuse --temporal sent %v\n%s", got, out)
	}
	again := newestRun(t, filepath.Join(d.dir, "runs"))
	if got := treeReused(t, again); len(got) != 4 {
		t.Errorf("reused visits %v; want the whole tree", got)
	}
	if got := answers(t, again); got["lead"] != "lead heard two" || got["lead/delegate:scout#1"] != "scout-says: two" {
		t.Errorf("answers of the reused tree = %v", got)
	}
}

// treeReused are the visits of run that were reused; it fails t when the
// run started more than the one child.
func treeReused(t *testing.T, run string) map[string]bool {
	t.Helper()
	reused := map[string]bool{}
	for _, f := range journal(t, run) {
		if f.Type == record.FactStart && f.Parent != "" && f.Visit != "lead/delegate:scout#1" {
			t.Errorf("a second child: %s", f.Visit)
		}
		if f.Type == record.FactEnd && f.Reused != nil {
			reused[f.Visit] = true
		}
	}
	return reused
}

// TestReuseOnTemporalRefusesAKnownSecretWithoutAKey: a recorded answer
// that holds what is now a secret of this process would reach Temporal's
// history in clear with the reused visits; without temporal.key the run
// is refused, exit 2, before any run directory is made, saying why (the
// flow file does not hold the value: the agent makes it).
func TestReuseOnTemporalRefusesAKnownSecretWithoutAKey(t *testing.T) {
	clitest.Tool(t, "temporal")
	srv := devserver.Start(t)
	const value = "the-recorded-value-7f3a9c2e1b"
	d := newSweepDir(t, map[string]string{"f.yaml": `name: f
agents:
  - {name: echo, description: says it, driver: exec, command: [sh, -c, 'cat >/dev/null; echo the-recorded-$(echo value)-7f3a9c2e1b']}
nodes:
  - {id: say, agent: echo, prompt: go}
`})
	if out, err := d.cmd("run", "f.yaml").CombinedOutput(); err != nil {
		t.Fatalf("flow run: %v\n%s", err, out)
	}
	c := d.cmd("run", "--reuse", "--temporal", srv.Address, "--task-queue", "refused", "f.yaml")
	c.Env = append(c.Env, "MY_SERVICE_TOKEN="+value, "FLOW_TEMPORAL_KEY=")
	out, err := c.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "hold a secret") || strings.Contains(string(out), value) {
		t.Errorf("flow run --reuse --temporal with a recorded secret and no key: %v, want exit 2 saying why\n%s", err, out)
	}
	if runs, _ := rundir.List(filepath.Join(d.dir, "runs")); len(runs) != 1 {
		t.Errorf("%d runs; the refused run made a run directory", len(runs))
	}
}
