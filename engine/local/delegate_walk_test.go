package local_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/enginetest"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/steps/delegate"
)

// fanOut is a driver whose delegating turns make all their calls at once,
// over the socket, and answer with the replies; the others answer "ok".
type fanOut struct {
	calls int
	mu    sync.Mutex
	got   []engine.DelegateReply
}

func (f *fanOut) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	in := int64(10)
	if d := t.Delegate; d != nil {
		var wg sync.WaitGroup
		for range f.calls {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := delegate.Call(ctx, d.Socket, d.Token, "scout", "look")
				if err != nil {
					r.Error = "call: " + err.Error()
				}
				f.mu.Lock()
				f.got = append(f.got, r)
				f.mu.Unlock()
			}()
		}
		wg.Wait()
	}
	return &engine.TurnResult{Status: engine.Completed, Output: "ok", Usage: record.Usage{Input: &in}}, nil
}

// TestDelegationLimitsOnTheLocalHost: a turn's calls made at once are held
// to concurrency and max_children, the refused ones say which limit and
// its value; with one live turn allowed in the run, the parent lends its
// place to its children rather than deadlock.
func TestDelegationLimitsOnTheLocalHost(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "fan.yaml")
	src := `name: fan
concurrency: 1
agents:
  - {name: lead, description: leads, driver: exec, command: [unused]}
  - {name: scout, description: scouts, driver: exec, command: [unused]}
nodes:
  - id: lead
    agent: lead
    prompt: Go.
    delegate: {agents: [scout], max_children: 3, concurrency: 3}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, diags := flows.Load(file, flows.Options{Disk: osdisk.OS, WorkDir: dir, UserAgentDirs: []string{}, Drivers: []string{"exec"}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	d := &fanOut{calls: 6}
	cfg := local.Config{Drivers: map[string]engine.Driver{"exec": d}, RunsDir: t.TempDir(), WorkDir: dir}
	opts := engine.Options{}
	if _, err := local.Execute(context.Background(), plan, cfg, opts); err == nil || !strings.Contains(err.Error(), "delegates") {
		t.Errorf("a run without a delegation server = %v, want it refused", err)
	}
	cfg.Delegates = local.DelegatesWith([]string{"flow", "mcp-delegate"})
	res, err := local.Execute(context.Background(), plan, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK {
		t.Fatalf("run failed: %+v", res.Failure)
	}
	answered, refused := 0, 0
	for _, r := range d.got {
		switch {
		case r.Answer == "ok":
			answered++
		case strings.Contains(r.Error, "max_children is 3") || strings.Contains(r.Error, "concurrency is 3"):
			refused++
		default:
			t.Errorf("reply %+v", r)
		}
	}
	if answered != 3 || refused != 3 {
		t.Errorf("%d answered and %d refused, want 3 and 3: %+v", answered, refused, d.got)
	}
	facts, err := rundir.ReadJournal(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	kids := 0
	for _, f := range facts {
		if f.Type == record.FactStart && f.Parent == "lead" {
			kids++
		}
	}
	if kids != 3 || res.Usage.Tokens() != 40 {
		t.Errorf("%d children, %d tokens in all; want 3 and 40", kids, res.Usage.Tokens())
	}
	// A host that serves no delegate calls refuses the plan before
	// anything runs.
	bare := enginetest.New()
	bare.Dir = dir
	_, err = engine.Walk(context.Background(), plan, engine.Options{RunID: "r1"}, noDelegator{bare}, nil)
	var re *engine.RefusedError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "serves no delegate calls") {
		t.Errorf("a walk on a host without a Delegator = %v, want it refused", err)
	}
}

type noDelegator struct{ *enginetest.Host }

func (noDelegator) Delegator() engine.Delegator { return nil }

// TestUnpricedChildrenWaitForAPrice: calls made at once under a budget
// before any turn of the run ended are not refused: the first child runs
// on all that is left, and its siblings wait for it to price them.
func TestUnpricedChildrenWaitForAPrice(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "fan.yaml")
	src := `name: fan
agents:
  - {name: lead, description: leads, driver: exec, command: [unused]}
  - {name: scout, description: scouts, driver: exec, command: [unused]}
nodes:
  - id: lead
    agent: lead
    prompt: Go.
    delegate: {agents: [scout], max_children: 3, budget: {tokens: 1000}}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, diags := flows.Load(file, flows.Options{Disk: osdisk.OS, WorkDir: dir, UserAgentDirs: []string{}, Drivers: []string{"exec"}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	d := &fanOut{calls: 3}
	res, err := local.Execute(context.Background(), plan, local.Config{Drivers: map[string]engine.Driver{"exec": d}, RunsDir: t.TempDir(), WorkDir: dir, Delegates: local.DelegatesWith([]string{"flow", "mcp-delegate"})}, engine.Options{})
	if err != nil || !res.OK {
		t.Fatalf("run: %v %+v", err, res)
	}
	for _, r := range d.got {
		if r.Answer != "ok" {
			t.Errorf("reply %+v, want every call answered", r)
		}
	}
}

// stuck is a driver whose scout turns never end on their own and whose
// lead turns delegate once and answer with the reply.
type stuck struct{}

func (stuck) Turn(ctx context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	if t.Agent.Name == "scout" {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	r, err := delegate.Call(ctx, t.Delegate.Socket, t.Delegate.Token, "scout", "look")
	if err != nil {
		return nil, err
	}
	return &engine.TurnResult{Status: engine.Completed, Output: "lead heard: " + r.Answer + r.Error}, nil
}

// TestChildFailureIsAReply: a child that times out (it takes the flow's
// timeout, not its parent node's) fails `timeout` as any visit does, and
// its parent reads the failure as the call's error and succeeds.
func TestChildFailureIsAReply(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "slow.yaml")
	src := `name: slow
timeout: 200ms
agents:
  - {name: lead, description: leads, driver: exec, command: [unused]}
  - {name: scout, description: scouts, driver: exec, command: [unused]}
nodes:
  - id: lead
    agent: lead
    prompt: Go.
    timeout: 30s
    delegate: {agents: [scout]}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, diags := flows.Load(file, flows.Options{Disk: osdisk.OS, WorkDir: dir, UserAgentDirs: []string{}, Drivers: []string{"exec"}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	res, err := local.Execute(context.Background(), plan, local.Config{Drivers: map[string]engine.Driver{"exec": stuck{}}, RunsDir: t.TempDir(), WorkDir: dir, Delegates: local.DelegatesWith([]string{"flow", "mcp-delegate"})}, engine.Options{})
	if err != nil || !res.OK {
		t.Fatalf("run: %v %+v", err, res)
	}
	if out, _ := res.Output.(string); !strings.Contains(out, "the child lead/delegate:scout#1 failed (timeout)") {
		t.Errorf("the parent's answer: %q", out)
	}
	facts, err := rundir.ReadJournal(res.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range facts {
		if f.Type == record.FactEnd && f.Visit == "lead/delegate:scout#1" && (f.Error == nil || f.Error.Kind != "timeout") {
			t.Errorf("the child's end: %+v", f)
		}
	}
}
