package temporal

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/workflow"
)

// TraceContext's host side: the client that starts a workflow and the
// worker that runs its activities, never the workflow itself.

// Inject writes ctx's span context, when it has one, into the headers.
func (TraceContext) Inject(ctx context.Context, w workflow.HeaderWriter) error {
	return set(w, w3c(ctx))
}

// Extract gives the activity's context the span context of the headers.
func (TraceContext) Extract(ctx context.Context, r workflow.HeaderReader) (context.Context, error) {
	tp, err := get(r)
	if err != nil || tp == "" {
		return ctx, err
	}
	return propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{traceHeader: tp}), nil
}

// w3c is ctx's span context as a W3C traceparent, "" without one.
func w3c(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c[traceHeader]
}
