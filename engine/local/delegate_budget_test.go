package local_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/steps/delegate"
)

// runaway is a driver whose turns are requests of size tokens each, billed
// as they are sent, as a model server would: a turn that may delegate
// sends a request, delegates to itself, and sends one more request to read
// the reply; a turn that may not delegate sends one request. A turn
// reports its tokens after each request, as a CLI's stream does.
type runaway struct {
	size   int64
	billed atomic.Int64
}

func (d *runaway) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	var live int64
	request := func() bool {
		if ctx.Err() != nil {
			return false
		}
		d.billed.Add(d.size)
		live += d.size
		t.Progress(engine.Progress{Activity: "writing", Tokens: live})
		return true
	}
	result := func(err error) (*engine.TurnResult, error) {
		res := &engine.TurnResult{Status: engine.Completed, Output: "done", Usage: record.Usage{Input: &live}}
		if err != nil {
			res.Status = engine.Aborted
		}
		return res, err
	}
	if !request() {
		return result(ctx.Err())
	}
	if t.Delegate != nil {
		if _, err := delegate.Call(ctx, t.Delegate.Socket, t.Delegate.Token, "runaway", "go one deeper"); err != nil {
			return result(err)
		}
		if !request() {
			return result(ctx.Err())
		}
	}
	return result(nil)
}

// TestRunawayTreeHoldsItsBudget: an agent that keeps delegating to itself
// under a flow budget, each of its turns reading its child's reply with
// one more request: when a call comes back with nothing left of the
// budget, the waiting parents are stopped before they read it, so the tree
// spends at most the budget plus one request, and the journal counts
// every request billed.
func TestRunawayTreeHoldsItsBudget(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "runaway.yaml")
	src := `name: runaway
budget: {tokens: 6000}
agents:
  - {name: runaway, description: delegates to itself, driver: exec, command: [unused]}
nodes:
  - {id: warm, agent: runaway, prompt: Warm up.}
  - id: lead
    agent: runaway
    prompt: Go.
    delegate: {agents: [runaway], max_depth: 10, max_children: 1}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, diags := flows.Load(file, flows.Options{Disk: osdisk.OS, WorkDir: dir, UserAgentDirs: []string{}, Drivers: []string{"exec"}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	const size, budget = 1000, 6000
	d := &runaway{size: size}
	res, err := local.Execute(context.Background(), plan, local.Config{Drivers: map[string]engine.Driver{"exec": d}, RunsDir: t.TempDir(), WorkDir: dir, Delegates: local.DelegatesWith([]string{"flow", "mcp-delegate"})}, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.Failure == nil || res.Failure.Root().Kind != "budget" {
		t.Errorf("the run: ok %v, failure %+v; want it failed budget", res.OK, res.Failure)
	}
	billed := d.billed.Load()
	if billed > budget+size {
		t.Errorf("the tree was billed %d tokens under a budget of %d: more than the budget and one request (%d)", billed, budget, size)
	}
	facts, err := rundir.ReadJournal(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	kids := 0
	for _, f := range facts {
		if f.Type == record.FactEnd && f.Usage != nil {
			sum += f.Usage.Tokens()
		}
		if f.Type == record.FactStart && f.Parent != "" {
			kids++
		}
	}
	if sum != billed || res.Usage.Tokens() != billed {
		t.Errorf("the journal counts %d tokens, the run %d; billed %d", sum, res.Usage.Tokens(), billed)
	}
	if kids < 3 {
		t.Errorf("%d children: the chain should have grown until the budget refused a call", kids)
	}
	t.Logf("billed %d under a budget of %d, %d children", billed, budget, kids)
}
