package temporal

import (
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/workflow"
)

// traceHeader is the Temporal header that carries a run's trace context.
const traceHeader = "traceparent"

// TraceContext carries a traced run's span context (docs/tracing.md) from
// the client that starts the workflow to the workflow, and from it to
// every activity, so that the agents and commands a worker runs get the
// run's TRACEPARENT as they do in flow run's own process. Give it to the
// client's ContextPropagators; the workers made from that client use it
// too. The workflow carries the traceparent as a string and nothing more
// (this file); the client and the activities, outside the workflow,
// inject and extract it with OpenTelemetry's propagator
// (tracecontext_host.go), which holds an HTTP carrier a workflow must not
// reach.
type TraceContext struct{}

var _ workflow.ContextPropagator = TraceContext{}

type traceKey struct{}

// InjectFromWorkflow passes the workflow's span context on to what it
// starts (activities, child workflows, a continue-as-new).
func (TraceContext) InjectFromWorkflow(ctx workflow.Context, w workflow.HeaderWriter) error {
	tp, _ := ctx.Value(traceKey{}).(string)
	return set(w, tp)
}

// ExtractToWorkflow keeps the headers' span context in the workflow's
// context.
func (TraceContext) ExtractToWorkflow(ctx workflow.Context, r workflow.HeaderReader) (workflow.Context, error) {
	tp, err := get(r)
	if err != nil || tp == "" {
		return ctx, err
	}
	return workflow.WithValue(ctx, traceKey{}, tp), nil
}

func set(w workflow.HeaderWriter, tp string) error {
	if tp == "" {
		return nil
	}
	p, err := converter.GetDefaultDataConverter().ToPayload(tp)
	if err != nil {
		return err
	}
	w.Set(traceHeader, p)
	return nil
}

func get(r workflow.HeaderReader) (string, error) {
	p, ok := r.Get(traceHeader)
	if !ok {
		return "", nil
	}
	var tp string
	err := converter.GetDefaultDataConverter().FromPayload(p, &tp)
	return tp, err
}
