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
	"github.com/flowrun/flow/rundir"
)

// runawayFlow is an agent that delegates to itself, deep, under a flow
// budget of tokens, after a first node that prices its turn; agent is its
// definition in the flow's agents.
func runawayFlow(agent string, tokens int64) string {
	return "name: runaway\nbudget: {tokens: " + itoa(tokens) + "}\nagents:\n" + agent + `nodes:
  - {id: warm, agent: runaway, prompt: Warm up.}
  - id: lead
    agent: runaway
    prompt: Go.
    delegate: {agents: [runaway], max_depth: 10, max_children: 1}
`
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// usageTotal is usage.json's total tokens.
func usageTotal(t *testing.T, run string) int64 {
	t.Helper()
	var u struct {
		Total struct{ Input, Output, CacheRead, CacheWrite int64 } `json:"total"`
	}
	b, err := os.ReadFile(filepath.Join(run, "usage.json"))
	if err != nil || json.Unmarshal(b, &u) != nil {
		t.Fatalf("usage.json: %v\n%s", err, b)
	}
	return u.Total.Input + u.Total.Output + u.Total.CacheRead + u.Total.CacheWrite
}

// checkRunaway checks a runaway tree's run: it failed `budget`, the tree
// grew before the budget refused it, what was billed is within the budget
// and one request (the largest billed), and usage.json counts every token
// billed.
func checkRunaway(t *testing.T, run, out string, err error, budget, billed, request int64) {
	t.Helper()
	if err == nil {
		t.Errorf("the runaway tree succeeded:\n%s", out)
	}
	info, ierr := rundir.Inspect(run)
	if ierr != nil {
		t.Fatal(ierr)
	}
	if info.Failure == nil || info.Failure.Root().Kind != "budget" {
		t.Errorf("the run's failure %+v, want budget\n%s", info.Failure, out)
	}
	kids := 0
	for _, f := range journal(t, run) {
		if f.Type == record.FactStart && f.Parent != "" {
			kids++
		}
		if f.Type == record.FactEnd && testing.Verbose() {
			t.Logf("end %s: %s, usage %s, error %+v", f.Visit, f.Time.Format("15:04:05.000"), showUsage(f.Usage), f.Error)
		}
	}
	t.Logf("billed %d under a budget of %d (a request: %d), %d children", billed, budget, request, kids)
	if kids < 2 {
		t.Errorf("%d children: the tree should grow until the budget refuses a call\n%s", kids, out)
	}
	if billed > budget+request {
		t.Errorf("billed %d under a budget of %d: more than the budget and one request (%d)", billed, budget, request)
	}
	if got := usageTotal(t, run); got != billed {
		t.Errorf("usage.json's total is %d, the billing log's %d", got, billed)
	}
}

// runawayGap says why a driver's runaway tree is not yet held to the
// billing log: what its CLI reports of a turn that is ended mid-turn.
var runawayGap = map[string]string{
	"codex":  "codex reports a turn's usage only at turn.completed: a parent ended mid-turn records none, so the budget cannot count it (issue 36, item 1: still open for codex)",
	"claude": "claude's stream-json gives a message's output tokens only in its final result: a parent ended after a tool call records output 1 for it (issue 36, item 1: still open for claude)",
}

// TestRunawayTreeBudget: on every driver, an agent that keeps delegating
// to itself under a flow budget: the model server bills at most the
// budget and one request, and usage.json is the billing log. Each waiting
// parent would read its child's failure with one more request; the call
// that finds nothing left ends the parent's turn instead.
func TestRunawayTreeBudget(t *testing.T) {
	eachDriver(t, func(t *testing.T, dc driverCase) {
		if why := runawayGap[dc.name]; why != "" {
			t.Skip(why)
		}
		s := modelserver.Start(t)
		const in, out = 3000, 40
		s.Handle(delegatetest.Runaway(`{"agent":"runaway","task":"go one deeper"}`, in, out))
		env, frontmatter := dc.setup(t, s.URL())
		agent := "  - name: runaway\n    description: delegates to itself\n    driver: " + dc.name + "\n    model: test-model\n"
		for _, l := range strings.Split(strings.TrimSpace(frontmatter), "\n") {
			if l != "" {
				agent += "    " + l + "\n"
			}
		}
		budget := int64(6 * (in + out))
		run, log, err := flowRun(t, map[string]string{"runaway.yaml": runawayFlow(agent, budget)}, env, "runaway.yaml")
		var request int64
		for i, b := range s.Bills() {
			request = max(request, b.Tokens())
			if testing.Verbose() {
				t.Logf("bill %d: %s %d", i, b.ID, b.Tokens())
			}
		}
		checkRunaway(t, run, log, err, budget, s.Billed(), request)
	})
}

// TestRunawayTreeBudgetExec: the same on the exec driver, whose program
// reports each request's usage (FLOW_USAGE, by id) and delegates with
// `flow delegate`; its billing log is a file each request adds to.
func TestRunawayTreeBudgetExec(t *testing.T) {
	t.Parallel()
	bill := filepath.Join(t.TempDir(), "bill")
	script := `cat >/dev/null; req() { n=$(od -An -N4 -tu4 /dev/urandom | tr -d " "); echo 1000 >>"$BILL"; echo "FLOW_USAGE {\"id\":\"$n\",\"input\":1000}" >&2; }; ` +
		`req; if [ -n "$FLOW_DELEGATE_SOCKET" ]; then flow delegate runaway "go one deeper" >/dev/null 2>&1; req; fi; echo done`
	agent := "  - name: runaway\n    description: delegates to itself\n    driver: exec\n    command: [bash, -c, '" + strings.ReplaceAll(script, "'", "''") + "']\n"
	const budget = 6000
	env := []string{"BILL=" + bill, "PATH=" + filepath.Dir(flowBinary(t)) + string(os.PathListSeparator) + os.Getenv("PATH")}
	run, log, err := flowRun(t, map[string]string{"runaway.yaml": runawayFlow(agent, budget)}, env, "runaway.yaml")
	b, _ := os.ReadFile(bill)
	billed := int64(1000 * strings.Count(string(b), "1000\n"))
	checkRunaway(t, run, log, err, budget, billed, 1000)
}
