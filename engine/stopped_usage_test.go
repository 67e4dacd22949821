package engine_test

import (
	"context"
	"testing"
	"time"

	. "github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
)

// A turn that ends without its provider's final figure — stopped by a
// budget, by its timeout, or cancelled with the run — records in its end
// fact what its stream had reported, marked partial, and the run's total
// counts it.
func TestStoppedTurnsRecordTheirUsage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, node string
		kind       schema.FailKind
		cancel     bool
	}{
		{name: "budget", node: `{id: big, agent: worker, prompt: x, budget: {tokens: 100}}`, kind: schema.FailBudget},
		{name: "timeout", node: `{id: big, agent: worker, prompt: x, timeout: 200ms}`, kind: schema.FailTimeout},
		{name: "cancelled", node: `{id: big, agent: worker, prompt: x}`, cancel: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := load(t, "stop", "name: stop\n"+agents+"nodes:\n  - "+tt.node+"\n")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			d := driverFunc(func(ctx context.Context, turn *Turn) (*TurnResult, error) {
				in, cached := int64(120), int64(30)
				turn.Progress(Progress{Activity: "writing", Tokens: in + cached})
				if tt.cancel {
					go func() { time.Sleep(50 * time.Millisecond); cancel() }()
				}
				<-ctx.Done()
				return &TurnResult{Status: Aborted, Usage: record.Usage{Input: &in, CacheRead: &cached, Partial: true}}, context.Cause(ctx)
			})
			res, err := local.Execute(ctx, p, local.Config{Drivers: map[string]Driver{"exec": d}, RunsDir: t.TempDir()}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if res.OK || (tt.kind != "" && res.Failure.Root().Kind != tt.kind) {
				t.Fatalf("want %s, got %+v", tt.kind, res.Failure)
			}
			facts, err := rundir.ReadJournal(res.Dir)
			if err != nil {
				t.Fatal(err)
			}
			var u *record.Usage
			for _, f := range facts {
				if f.Type == record.FactEnd && f.Visit == "big" {
					u = f.Usage
				}
			}
			if u == nil || u.Tokens() != 150 || !u.Partial {
				t.Fatalf("the end fact records %+v, want the 150 tokens reported, partial", u)
			}
			if res.Usage.Tokens() != 150 || !res.Usage.Partial {
				t.Errorf("the run's usage = %+v, want 150 tokens, partial", res.Usage)
			}
		})
	}
}
