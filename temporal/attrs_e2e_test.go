package temporal

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"

	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/rundir"
)

func TestE2EARunCarriesItsFlowTriggerAndStatus(t *testing.T) {
	cl := newCluster(t, &byWorker{name: "A"})
	dir := t.TempDir()
	file := filepath.Join(dir, "named.yaml")
	if err := os.WriteFile(file, []byte("name: named\nnodes:\n  - {id: a, run: [\"true\"]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plan, diags := flows.Load(file, flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	id := rundir.NewRunID(time.Now())
	snap := local.NewSnapshot(id, plan, nil, rundir.Settings{WorkDir: dir, Concurrency: 8, TurnTimeout: "1m"})
	c := &Client{Client: cl.c, Address: cl.srv.Address, TaskQueue: cl.queue}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	run, err := c.start(WithTrigger(ctx, "api"), snap, RunInput{})
	if err != nil {
		t.Fatal(err)
	}
	if err := run.Get(ctx, nil); err != nil {
		t.Fatal(err)
	}
	desc, err := cl.c.DescribeWorkflowExecution(ctx, id, run.GetRunID())
	if err != nil {
		t.Fatal(err)
	}
	info := desc.GetWorkflowExecutionInfo()
	dc := converter.GetDefaultDataConverter()
	read := func(what string, p map[string]*commonPayload, key string) string {
		var v string
		if err := dc.FromPayload(p[key], &v); err != nil {
			t.Errorf("the run's %s %s: %v", what, key, err)
		}
		return v
	}
	attrs := info.GetSearchAttributes().GetIndexedFields()
	for key, want := range map[string]string{AttrFlow: "named", AttrTrigger: "api", AttrStatus: "succeeded"} {
		if got := read("search attribute", attrs, key); got != want {
			t.Errorf("search attribute %s = %q, want %q", key, got, want)
		}
	}
	fields := info.GetMemo().GetFields()
	for key, want := range map[string]string{"flow": "named", "trigger": "api", "file": file} {
		if got := read("memo", fields, key); got != want {
			t.Errorf("memo %s = %q, want %q", key, got, want)
		}
	}
}

type commonPayload = commonpb.Payload
