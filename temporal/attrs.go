package temporal

import (
	"context"
	"sync"

	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
)

// The search attributes flow sets on its runs' workflows, so that the
// Temporal UI and `temporal workflow list --query` find runs by flow,
// trigger and status (docs/temporal.md, Finding runs in Temporal). A
// namespace has them once registered; flow sets them only where it finds
// all three.
const (
	AttrFlow    = "FlowName"
	AttrTrigger = "FlowTrigger"
	AttrStatus  = "FlowStatus"
)

var (
	keyFlow    = temporal.NewSearchAttributeKeyKeyword(AttrFlow)
	keyTrigger = temporal.NewSearchAttributeKeyKeyword(AttrTrigger)
	keyStatus  = temporal.NewSearchAttributeKeyKeyword(AttrStatus)
)

// The triggers of runs, as flow serve names them; a run started by
// flow run (or flow sweep, flow resume) is TriggerRun.
const (
	TriggerRun      = "run"
	TriggerSchedule = "schedule"
)

type triggerKey struct{}

// WithTrigger says why the runs started with ctx start (flow serve's
// trigger: api, schedule, resume…), for their memo and search attribute.
func WithTrigger(ctx context.Context, trigger string) context.Context {
	return context.WithValue(ctx, triggerKey{}, trigger)
}

func triggerOf(ctx context.Context) string {
	if t, ok := ctx.Value(triggerKey{}).(string); ok && t != "" {
		return t
	}
	return TriggerRun
}

// searchAttrs finds once whether the namespace has flow's search
// attributes registered.
type searchAttrs struct {
	once sync.Once
	ok   bool
}

var namespaces sync.Map // namespace -> *searchAttrs

// searchable reports whether the Client's namespace has flow's search
// attributes; a server that cannot say is taken to have none.
func (c *Client) searchable(ctx context.Context) bool {
	ns := c.Namespace
	if ns == "" {
		ns = "default"
	}
	v, _ := namespaces.LoadOrStore(c.Address+"/"+ns, &searchAttrs{})
	sa := v.(*searchAttrs)
	sa.once.Do(func() {
		resp, err := c.Client.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
		if err != nil {
			return
		}
		have := resp.GetCustomAttributes()
		_, f := have[AttrFlow]
		_, t := have[AttrTrigger]
		_, s := have[AttrStatus]
		sa.ok = f && t && s
	})
	return sa.ok
}

// memo is what the Temporal UI shows of a run without registration.
func memo(snap *rundir.Snapshot, trigger string) map[string]any {
	return map[string]any{"flow": snap.Flow, "trigger": trigger, "file": snap.File}
}

// startAttrs are a run's search attributes as it starts.
func startAttrs(flow, trigger string) temporal.SearchAttributes {
	return temporal.NewSearchAttributes(keyFlow.ValueSet(flow), keyTrigger.ValueSet(trigger), keyStatus.ValueSet(string(record.StatusRunning)))
}

// endedAs sets a run's status search attribute to how it ended, when it
// was started with flow's search attributes (in.Searchable): a workflow
// started without them, or recorded before them, issues no command.
func endedAs(ctx workflow.Context, in *RunInput, status record.Status) {
	if in.Searchable {
		_ = workflow.UpsertTypedSearchAttributes(ctx, keyStatus.ValueSet(string(status)))
	}
}
