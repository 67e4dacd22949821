package trace

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/flowrun/flow/engine/record"
)

// visits makes, for every end fact that spent or ran an agent, an
// `invoke_agent {agent}` span from its start fact to it, with a
// `chat {model}` child per request carrying its usage, and returns when
// the run ended (its last run fact, else fallback). A visit that ran again
// after a resume has an end fact per attempt, each paired with the start
// before it. The tool facts of a native turn (docs/native.md) become
// `execute_tool {tool}` children of the visit's span that ends after them,
// and split its chat span into one per request (request).
func (r *Run) visits(facts []*record.Fact, fallback time.Time) time.Time {
	starts := map[string][]time.Time{}
	tools := map[string][]*record.Fact{}
	end := fallback
	for _, f := range facts {
		switch f.Type {
		case record.FactStart:
			starts[f.Visit] = append(starts[f.Visit], f.Time)
		case record.FactTool:
			tools[f.Visit] = append(tools[f.Visit], f)
		case record.FactRun:
			if f.Status != record.StatusRunning && !f.Time.IsZero() {
				end = f.Time
				r.runFailure = ""
				if f.Error != nil {
					r.runFailure = string(f.Error.Kind)
				}
			}
		case record.FactEnd:
			if f.Agent == "" && f.Usage == nil {
				continue
			}
			begin := f.Time
			if q := starts[f.Visit]; len(q) > 0 {
				begin, starts[f.Visit] = q[0], q[1:]
			}
			r.visit(f, begin, tools[f.Visit])
			delete(tools, f.Visit)
			if f.Time.After(end) {
				end = f.Time
			}
		}
	}
	return end
}

func (r *Run) visit(f *record.Fact, begin time.Time, tools []*record.Fact) {
	failed := f.OK != nil && !*f.OK
	provider := r.providers[f.Agent].name(f.Model)
	name := "invoke_agent " + f.Agent
	if f.Agent == "" {
		name = "visit " + f.Visit
	}
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameInvokeAgent, semconv.GenAIProviderNameKey.String(provider),
		attribute.String("flow.visit", f.Visit)}
	if f.Agent != "" {
		attrs = append(attrs, semconv.GenAIAgentName(f.Agent))
	}
	if f.Model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(f.Model))
	}
	if c := conversation(f); c != "" {
		attrs = append(attrs, semconv.GenAIConversationID(c))
	}
	ctx, span := r.tr.Start(r.ctx, name, oteltrace.WithTimestamp(begin), oteltrace.WithSpanKind(oteltrace.SpanKindInternal),
		oteltrace.WithAttributes(attrs...))
	if f.Usage != nil {
		reqs := requests(f, begin, tools)
		for i, q := range reqs {
			name := "chat " + f.Model
			if f.Model == "" { // an exec agent without a model
				name = "chat"
			}
			_, chat := r.tr.Start(ctx, name, oteltrace.WithTimestamp(q.begin), oteltrace.WithSpanKind(oteltrace.SpanKindClient),
				oteltrace.WithAttributes(chatAttrs(f, provider, q.usage)...))
			last := i == len(reqs)-1
			if failed && last {
				chat.SetStatus(codes.Error, r.secrets.Scrub(failure(f)))
				chat.SetAttributes(errorType(failKind(f)))
			}
			chat.End(oteltrace.WithTimestamp(q.end))
			r.meters.record(genaiconv.OperationNameChat, f.Model, provider, q.usage, q.end.Sub(q.begin), failed && last, failKind(f))
		}
	}
	for _, tf := range tools {
		c := tf.Tool
		_, ts := r.tr.Start(ctx, "execute_tool "+c.Name, oteltrace.WithTimestamp(tf.Time.Add(-time.Duration(c.WallMS)*time.Millisecond)),
			oteltrace.WithSpanKind(oteltrace.SpanKindInternal), oteltrace.WithAttributes(
				semconv.GenAIOperationNameExecuteTool, semconv.GenAIProviderNameKey.String(provider),
				semconv.GenAIToolName(c.Name), semconv.GenAIToolCallID(c.ID), attribute.String("flow.visit", f.Visit),
				attribute.String("flow.tool.protocol", c.Protocol)))
		if c.Error {
			ts.SetStatus(codes.Error, "the tool's result is an error")
			ts.SetAttributes(errorType("tool_error"))
		}
		ts.End(oteltrace.WithTimestamp(tf.Time))
	}
	if failed {
		span.SetStatus(codes.Error, r.secrets.Scrub(failure(f)))
		span.SetAttributes(errorType(failKind(f)))
	}
	span.End(oteltrace.WithTimestamp(f.Time))
	if f.Agent != "" {
		r.meters.record(genaiconv.OperationNameInvokeAgent, f.Model, provider, nil, f.Time.Sub(begin), failed, failKind(f))
	}
}

// conversation is the visit's memory session: the id its driver gave the
// session, else — for a driver that keeps none, such as exec — the memory
// scope the session belongs to.
func conversation(f *record.Fact) string {
	switch {
	case f.Session != "":
		return f.Session
	case f.Scope != nil:
		return f.Scope.Path + "#" + f.Scope.Agent
	}
	return ""
}

// chatAttrs are a request's usage as the GenAI conventions name it;
// a figure the driver did not report is left out, not sent as 0.
// gen_ai.usage.input_tokens is every input token, cached ones included
// (the ledger's input leaves the cache out: docs/drivers.md#usage).
func chatAttrs(f *record.Fact, provider string, u *record.Usage) []attribute.KeyValue {
	attrs := []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(provider),
		attribute.String("flow.visit", f.Visit)}
	if f.Model != "" {
		attrs = append(attrs, semconv.GenAIRequestModel(f.Model))
	}
	if in := inputTokens(u); in != nil {
		attrs = append(attrs, semconv.GenAIUsageInputTokensKey.Int64(*in))
	}
	for _, n := range []struct {
		key attribute.Key
		v   *int64
	}{
		{semconv.GenAIUsageOutputTokensKey, u.Output},
		{semconv.GenAIUsageCacheReadInputTokensKey, u.CacheRead},
		{semconv.GenAIUsageCacheCreationInputTokensKey, u.CacheWrite},
		{"flow.usage.turns", u.Turns},
	} {
		if n.v != nil {
			attrs = append(attrs, n.key.Int64(*n.v))
		}
	}
	if u.Cost != nil {
		attrs = append(attrs, attribute.Float64("flow.usage.cost", *u.Cost))
	}
	if u.Partial {
		attrs = append(attrs, attribute.Bool("flow.usage.partial", true))
	}
	return attrs
}

// inputTokens is every input token of u, cached ones included; nil when
// the driver reported none of them.
func inputTokens(u *record.Usage) *int64 {
	var n int64
	any := false
	for _, p := range []*int64{u.Input, u.CacheRead, u.CacheWrite} {
		if p != nil {
			n, any = n+*p, true
		}
	}
	if !any {
		return nil
	}
	return &n
}

func failure(f *record.Fact) string {
	if f.Error != nil {
		return string(f.Error.Kind) + ": " + f.Error.Message
	}
	return "failed"
}

// failKind is the failure kind of a failed visit (docs/flow-files.md),
// "" when its end fact names none.
func failKind(f *record.Fact) string {
	if f.Error != nil {
		return string(f.Error.Kind)
	}
	return ""
}

// errorType is error.type: flow's failure kind, else the conventions'
// _OTHER.
func errorType(kind string) attribute.KeyValue {
	if kind == "" {
		return semconv.ErrorTypeOther
	}
	return semconv.ErrorTypeKey.String(kind)
}
