package local_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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

// limitedScout is a driver whose scout turns are refused for now
// (rate_limit) while limited holds, and whose lead turns delegate once and
// answer with whatever came back — its error too.
type limitedScout struct {
	limited      atomic.Bool
	scouts, lead atomic.Int32
}

func (d *limitedScout) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	in := int64(10)
	if t.Agent.Name == "scout" {
		d.scouts.Add(1)
		if d.limited.Load() {
			return nil, fmt.Errorf("%w: 429 too many requests", record.ErrRateLimit)
		}
		return &engine.TurnResult{Status: engine.Completed, Output: "the scout looked", Usage: record.Usage{Input: &in}}, nil
	}
	d.lead.Add(1)
	r, err := delegate.Call(ctx, t.Delegate.Socket, t.Delegate.Token, "scout", "look")
	if err != nil {
		return nil, err
	}
	return &engine.TurnResult{Status: engine.Completed, Output: "lead heard: " + r.Answer + r.Error, Usage: record.Usage{Input: &in}}, nil
}

// TestChildRateLimitIsInfrastructure: a child refused for now by its
// provider is not a result its parent may answer from: the parent's visit
// fails rate_limit, the run says infra_in_tree and is resumable; once the
// limit lifts, `flow resume` runs the child again (never replayed from
// the journal) and the parent's turn, and the run succeeds on the
// child's answer.
func TestChildRateLimitIsInfrastructure(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "lim.yaml")
	src := `name: lim
agents:
  - {name: lead, description: leads, driver: exec, command: [unused]}
  - {name: scout, description: scouts, driver: exec, command: [unused]}
nodes:
  - id: lead
    agent: lead
    prompt: Go.
    delegate: {agents: [scout]}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	load := flows.Options{Disk: osdisk.OS, WorkDir: dir, UserAgentDirs: []string{}, Drivers: []string{"exec"}}
	plan, diags := flows.Load(file, load)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	d := &limitedScout{}
	d.limited.Store(true)
	cfg := local.Config{Drivers: map[string]engine.Driver{"exec": d}, RunsDir: t.TempDir(), WorkDir: dir, Delegates: local.DelegatesWith([]string{"flow", "mcp-delegate"})}
	opts := engine.Options{}
	res, err := local.Execute(context.Background(), plan, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || res.Failure == nil || res.Failure.Root().Kind != "rate_limit" || !res.InfraInTree {
		t.Fatalf("the run: ok %v, infra_in_tree %v, failure %+v; want it failed rate_limit with infra_in_tree", res.OK, res.InfraInTree, res.Failure)
	}
	info, err := rundir.Inspect(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Resumable || !info.InfraInTree {
		t.Fatalf("inspected: resumable %v (%s), infra_in_tree %v", info.Resumable, info.Why, info.InfraInTree)
	}
	d.limited.Store(false)
	res, err = local.Resume(context.Background(), res.Dir, load, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.InfraInTree {
		t.Fatalf("the resumed run: ok %v, infra_in_tree %v, failure %+v", res.OK, res.InfraInTree, res.Failure)
	}
	if out, _ := res.Output.(string); !strings.Contains(out, "the scout looked") {
		t.Errorf("the lead's answer %q: want the scout's answer, run again", out)
	}
	if d.scouts.Load() != 2 || d.lead.Load() != 2 {
		t.Errorf("the scout ran %d times and the lead %d; want 2 and 2", d.scouts.Load(), d.lead.Load())
	}
}
