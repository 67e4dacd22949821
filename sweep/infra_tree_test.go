package sweep_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/runner"
	"github.com/flowrun/flow/steps/delegate"
	"github.com/flowrun/flow/sweep"
)

// limitedHelper is a driver whose helper turns are refused for now
// (rate_limit) while limited holds, and whose lead turns delegate to the
// helper and answer from whatever came back, its error too: a lead that
// would pass the cell on a 429.
type limitedHelper struct{ limited atomic.Bool }

func (d *limitedHelper) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	in := int64(10)
	if t.Agent.Name == "helper" {
		if d.limited.Load() {
			return nil, fmt.Errorf("%w: 429 too many requests", record.ErrRateLimit)
		}
		return &engine.TurnResult{Status: engine.Completed, Output: "helped", Usage: record.Usage{Input: &in}}, nil
	}
	r, err := delegate.Call(ctx, t.Delegate.Socket, t.Delegate.Token, "helper", "help")
	if err != nil {
		return nil, err
	}
	return &engine.TurnResult{Status: engine.Completed, Output: "lead: " + r.Answer + r.Error, Usage: record.Usage{Input: &in}}, nil
}

// TestSweepChildRateLimitIsNotScored: a sweep whose lead delegates to a
// helper that only gets 429s scores no cell — neither a success from the
// lead's answer nor a failure — and its report says why; once the limit
// lifts, resuming the sweep runs the helpers and the leads again and
// scores every cell.
func TestSweepChildRateLimitIsNotScored(t *testing.T) {
	dir := t.TempDir()
	src := `name: lead
agents:
  - {name: lead, description: leads, driver: exec, command: [unused]}
  - {name: helper, description: helps, driver: exec, command: [unused]}
nodes:
  - id: lead
    agent: lead
    prompt: Go.
    delegate: {agents: [helper]}
`
	file := filepath.Join(dir, "lead.yaml")
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	load := flows.Options{Disk: osdisk.OS, WorkDir: dir, UserAgentDirs: []string{}, Drivers: []string{"exec"}}
	plan, diags := flows.Load(file, load)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	sweeps := filepath.Join(dir, "sweeps")
	sw, err := sweep.Create(sweeps, plan, sweep.Config{Spec: sweep.Spec{Models: []string{"m1"}, Repeat: 2}, Concurrency: 2, WorkDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	d := &limitedHelper{}
	d.limited.Store(true)
	ro := sweep.RunOptions{Host: runner.Host{Drivers: map[string]engine.Driver{"exec": d}, WorkDir: dir}, Engine: engine.Options{Concurrency: 2}, Load: load}
	if err := sw.Run(context.Background(), plan, ro); err != nil {
		t.Fatal(err)
	}
	rep := sweep.Build(sw.Snapshot())
	if c := rep.Cells; c.Succeeded != 0 || c.Failed != 0 || c.SetAside != 2 || c.SetAsideBy["rate_limit"] != 2 {
		t.Errorf("counts %+v: want 0 scored, 2 set aside on rate_limit", c)
	}
	md, _ := os.ReadFile(filepath.Join(sweeps, sw.ID(), "report.md"))
	if !strings.Contains(string(md), "set aside still failing on the infrastructure") || !strings.Contains(string(md), "rate_limit") {
		t.Errorf("the report does not say why no cell was scored:\n%s", md)
	}

	d.limited.Store(false)
	again, err := sweep.Open(filepath.Join(sweeps, sw.ID()))
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Run(context.Background(), plan, ro); err != nil {
		t.Fatal(err)
	}
	if c := sweep.Build(again.Snapshot()).Cells; c.Succeeded != 2 || c.SetAside != 0 {
		t.Errorf("after the limit lifted, counts %+v: want 2 succeeded", c)
	}
}
