package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/rundir"
)

// A server that reports prompt_tokens -1000000 refunds no budget: the
// turn's usage is unknown, it counts as what was left of the 20-token
// budget (the run's first turn reserved nothing), and the next turn is
// refused before it is sent. The old code let every turn run.
func TestHostileNegativeUsageRefundsNoBudget(t *testing.T) {
	t.Parallel()
	s := modelserver.Start(t)
	var generations atomic.Int32
	s.Handle(func(r modelserver.Request) modelserver.Reply {
		if strings.HasSuffix(r.Path, "/chat/completions") {
			generations.Add(1)
		}
		return modelserver.Reply{Text: "noted", Input: -1000000, Output: 5}
	})
	flow := `name: f
budget: {tokens: 20}
agents: [./agents]
nodes:
  - {id: t1, agent: helper, prompt: one}
  - {id: t2, agent: helper, prompt: two}
  - {id: t3, agent: helper, prompt: three}
  - {id: t4, agent: helper, prompt: four}
`
	run, out, err := runFlowResult(t, driverByName(t, "openai"), s, flow)
	if err == nil {
		for _, f := range journal(t, run) {
			t.Logf("%s %s %+v", f.Type, f.Visit, f.Usage)
		}
		t.Fatalf("the run should fail on its budget:\n%s", out)
	}
	info, ierr := rundir.Inspect(run)
	if ierr != nil {
		t.Fatal(ierr)
	}
	if info.Failure == nil || info.Failure.Root().Kind != "budget" {
		t.Fatalf("want kind budget, got %+v\n%s", info.Failure, out)
	}
	if n := generations.Load(); n != 1 {
		t.Fatalf("%d turns reached the server under a 20-token budget after a turn reported -1000000 tokens, want 1", n)
	}
	for _, f := range journal(t, run) {
		if f.Type == "end" && f.Visit == "t1" && (f.Usage == nil || !f.Usage.Unknown || f.Usage.Tokens() < 0) {
			t.Errorf("t1's usage %+v, want unknown and never negative", f.Usage)
		}
	}
}

// An exec child that reports FLOW_USAGE {"input":-5000} refunds no tree
// budget: its usage is unknown and counts as what it reserved (a child the
// run could not price reserves all that is left), so of 40 children under
// a 1,000-token delegation budget only the first runs; the old code ran
// all 40.
func TestHostileNegativeUsageOfDelegatedChildren(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	src := `name: tree
agents:
  - name: lead
    description: sends forty scouts
    driver: exec
    command: [bash, -c, 'cat >/dev/null; for i in $(seq 40); do flow delegate scout "look $i" >/dev/null 2>&1; done; echo done']
  - name: scout
    description: looks
    driver: exec
    command: [bash, -c, 'cat >/dev/null; echo x >>children.log; echo "FLOW_USAGE {\"input\": -5000}" >&2; echo looked']
nodes:
  - id: lead
    agent: lead
    prompt: Look everywhere.
    delegate: {agents: [scout], max_children: 40, budget: {tokens: 1000}}
`
	if err := os.WriteFile(filepath.Join(dir, "tree.yaml"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := flowBinary(t)
	cmd := exec.Command(bin, "run", "tree.yaml")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, _ := cmd.CombinedOutput()
	log, _ := os.ReadFile(filepath.Join(dir, "children.log"))
	if n := strings.Count(string(log), "x"); n != 1 {
		t.Fatalf("%d of 40 children ran under a 1,000-token budget after one reported -5000 tokens, want 1\n%s", n, out)
	}
}
