package main

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/delegatetest"
	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/rundir"
)

// treeFlow is a lead that sends a scout, a report that reads the lead and
// a node that reads neither, all on the openai driver.
const treeFlow = `name: tree
agents: [./agents]
nodes:
  - id: lead
    agent: lead
    prompt: Find where the flaky test comes from.
    delegate: {agents: [scout]}
  - id: report
    agent: reporter
    prompt: Write it up.
    reads: [lead]
  - id: other
    agent: reporter
    prompt: Say hello.
`

// treeModel is the scripted model of treeFlow: the scout's answer says
// which version of its instructions it read, the lead's says what the
// scout answered, and the report's what the lead answered. It counts the
// requests of each agent.
type treeModel struct {
	mu    sync.Mutex
	asked map[string]int
}

func (m *treeModel) reply(r modelserver.Request) modelserver.Reply {
	body := string(r.Body)
	who, text := "other", "hello"
	switch tool := delegatetest.ToolName(r); {
	case tool != "" && strings.Contains(body, "scout-says:"):
		who, text = "lead", "lead heard "+said(body, "scout-says: ")
	case tool != "":
		m.count("lead")
		return modelserver.Reply{ToolCall: &modelserver.ToolCall{Name: tool, Arguments: `{"agent":"scout","task":"look at A"}`}}
	case strings.Contains(body, "You scout."):
		who, text = "scout", "scout-says: "+said(body, "Version ")
	case strings.Contains(body, "Write it up."):
		who, text = "report", "report of: lead heard "+said(body, "lead heard ")
	}
	m.count(who)
	return modelserver.Reply{Text: text}
}

// said is "one" or "two": the word after mark in body.
func said(body, mark string) string {
	if strings.Contains(body, mark+"two") {
		return "two"
	}
	return "one"
}

func (m *treeModel) count(who string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.asked[who]++
}

// take returns the requests counted so far, by agent, and starts again.
func (m *treeModel) take() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	got := m.asked
	m.asked = map[string]int{}
	return got
}

// TestReuseThroughTheTree: after a child agent's instructions are edited,
// flow plan --reuse names the child and its parent as runs (and the
// report that reads the parent), and flow run --reuse runs exactly those:
// the child once (the live lead's call is answered by the child the
// replay ran), the lead, and the report, which reads the lead's new
// answer; the other node is reused. No answer is stale, and the tree has
// one child. A run after it reuses every visit.
func TestReuseThroughTheTree(t *testing.T) {
	s := modelserver.Start(t)
	m := &treeModel{asked: map[string]int{}}
	s.Handle(m.reply)
	d := treeDir(t, s)
	flow := func(args ...string) string { t.Helper(); return d.mustFlow(t, args...) }
	flow("run", "tree.yaml")
	if got := m.take(); got["lead"] != 2 || got["scout"] != 1 || got["report"] != 1 || got["other"] != 1 {
		t.Fatalf("the first run's requests: %v", got)
	}
	if out := flow("plan", "--reuse", "tree.yaml"); !strings.Contains(out, "4 of 4 visits reused, 0 run") {
		t.Fatalf("flow plan --reuse of an unchanged flow:\n%s", out)
	}

	scout := filepath.Join(d.dir, "agents", "scout.md")
	b, _ := os.ReadFile(scout)
	if err := os.WriteFile(scout, []byte(strings.Replace(string(b), "Version one.", "Version two.", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := flow("plan", "--reuse", "tree.yaml")
	for _, want := range []string{"1 of 4 visits reused, 3 run",
		"run    lead  its child lead/delegate:scout#1 runs again",
		"run    lead/delegate:scout#1  the agent file changed",
		"run    report  reads `lead` which re-runs",
		"reuse  other"} {
		if !strings.Contains(plan, want) {
			t.Errorf("flow plan --reuse after the scout's instructions changed does not say %q:\n%s", want, plan)
		}
	}
	if got := m.take(); len(got) != 0 {
		t.Errorf("flow plan --reuse sent requests: %v", got)
	}

	out := flow("run", "--reuse", "tree.yaml")
	if got := m.take(); got["scout"] != 1 || got["lead"] != 2 || got["report"] != 1 || got["other"] != 0 {
		t.Errorf("flow run --reuse sent %v; want the scout once, the lead's two requests and the report's one\n%s", got, out)
	}
	run := newestRun(t, filepath.Join(d.dir, "runs"))
	got := answers(t, run)
	if got["lead/delegate:scout#1"] != "scout-says: two" || got["lead"] != "lead heard two" || got["report"] != "report of: lead heard two" {
		t.Errorf("stale answers after the scout changed: %v", got)
	}
	reused := map[string]bool{}
	for _, f := range journal(t, run) {
		if f.Type == record.FactStart && f.Parent != "" && f.Visit != "lead/delegate:scout#1" {
			t.Errorf("a second child: %s", f.Visit)
		}
		if f.Type == record.FactEnd && f.Reused != nil {
			reused[f.Visit] = true
		}
	}
	if len(reused) != 1 || !reused["other"] {
		t.Errorf("reused visits %v; want only other", reused)
	}
	if out := flow("plan", "--reuse", "tree.yaml"); !strings.Contains(out, "4 of 4 visits reused, 0 run") {
		t.Errorf("flow plan --reuse after the run:\n%s", out)
	}
}

// newestRun is the run directory under runs that started last.
func newestRun(t *testing.T, runs string) string {
	t.Helper()
	all, err := rundir.List(runs)
	if err != nil || len(all) == 0 {
		t.Fatalf("runs under %s: %v", runs, err)
	}
	newest := all[0]
	for _, r := range all[1:] {
		if r.Started.After(newest.Started) {
			newest = r
		}
	}
	return newest.Dir
}

// treeDir is a directory with treeFlow and its three agents on the
// openai driver against s.
func treeDir(t *testing.T, s *modelserver.Server) *sweepDir {
	agent := func(name, body string) string {
		return "---\nname: " + name + "\ndescription: the " + name + "\ndriver: openai\nmodel: test-model\nbase_url: " + s.URL() +
			"/v1\napi_key_env: FLOW_TEST_MODEL_KEY\n---\n" + body + "\n"
	}
	return newSweepDir(t, map[string]string{
		"tree.yaml":          treeFlow,
		"agents/lead.md":     agent("lead", "You lead."),
		"agents/scout.md":    agent("scout", "You scout. Version one."),
		"agents/reporter.md": agent("reporter", "You report."),
	})
}

// mustFlow runs flow in d with the model server's key and no user
// configuration, and fails the test if it does not exit 0.
func (d *sweepDir) mustFlow(t *testing.T, args ...string) string {
	t.Helper()
	c := d.cmd(args...)
	c.Env = append(c.Env, "FLOW_TEST_MODEL_KEY="+cliKey, cleanHome(t))
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("flow %v: %v\n%s", args, err, out)
	}
	return string(out)
}
