package trace

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/flowrun/flow/rundir"
)

// visits makes, for every end fact that spent or ran an agent, an
// `invoke_agent {agent}` span from its start fact to it, with a
// `chat {model}` child carrying its usage, and returns when the run ended
// (its last run fact, else fallback). A visit that ran again after a
// resume has an end fact per attempt, each paired with the start before
// it. The tool facts of a native turn (docs/native.md) become
// `execute_tool {tool}` children of the visit's span that ends after them.
func (r *Run) visits(facts []*rundir.Fact, fallback time.Time) time.Time {
	starts := map[string][]time.Time{}
	tools := map[string][]*rundir.Fact{}
	end := fallback
	for _, f := range facts {
		switch f.Type {
		case rundir.FactStart:
			starts[f.Visit] = append(starts[f.Visit], f.Time)
		case rundir.FactTool:
			tools[f.Visit] = append(tools[f.Visit], f)
		case rundir.FactRun:
			if f.Status != rundir.StatusRunning && !f.Time.IsZero() {
				end = f.Time
			}
		case rundir.FactEnd:
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

func (r *Run) visit(f *rundir.Fact, begin time.Time, tools []*rundir.Fact) {
	failed := f.OK != nil && !*f.OK
	name, op := "invoke_agent "+f.Agent, "invoke_agent"
	if f.Agent == "" {
		name = "visit " + f.Visit
	}
	attrs := []attribute.KeyValue{attribute.String("gen_ai.operation.name", op), attribute.String("flow.visit", f.Visit)}
	if f.Agent != "" {
		attrs = append(attrs, attribute.String("gen_ai.agent.name", f.Agent))
	}
	if c := conversation(f); c != "" {
		attrs = append(attrs, attribute.String("gen_ai.conversation.id", c))
	}
	ctx, span := r.tr.Start(r.ctx, name, oteltrace.WithTimestamp(begin), oteltrace.WithSpanKind(oteltrace.SpanKindInternal),
		oteltrace.WithAttributes(attrs...))
	if f.Usage != nil {
		name := "chat " + f.Model
		if f.Model == "" { // an exec agent without a model
			name = "chat"
		}
		_, chat := r.tr.Start(ctx, name, oteltrace.WithTimestamp(begin), oteltrace.WithSpanKind(oteltrace.SpanKindClient),
			oteltrace.WithAttributes(chatAttrs(f)...))
		if failed {
			chat.SetStatus(codes.Error, r.secrets.Scrub(failure(f)))
		}
		chat.End(oteltrace.WithTimestamp(f.Time))
	}
	for _, tf := range tools {
		c := tf.Tool
		_, ts := r.tr.Start(ctx, "execute_tool "+c.Name, oteltrace.WithTimestamp(tf.Time.Add(-time.Duration(c.WallMS)*time.Millisecond)),
			oteltrace.WithSpanKind(oteltrace.SpanKindInternal), oteltrace.WithAttributes(
				attribute.String("gen_ai.operation.name", "execute_tool"), attribute.String("gen_ai.tool.name", c.Name),
				attribute.String("gen_ai.tool.call.id", c.ID), attribute.String("flow.visit", f.Visit),
				attribute.String("flow.tool.protocol", c.Protocol)))
		if c.Error {
			ts.SetStatus(codes.Error, "the tool's result is an error")
		}
		ts.End(oteltrace.WithTimestamp(tf.Time))
	}
	if failed {
		span.SetStatus(codes.Error, r.secrets.Scrub(failure(f)))
	}
	span.End(oteltrace.WithTimestamp(f.Time))
}

// conversation is the visit's memory session: the id its driver gave the
// session, else — for a driver that keeps none, such as exec — the memory
// scope the session belongs to.
func conversation(f *rundir.Fact) string {
	switch {
	case f.Session != "":
		return f.Session
	case f.Scope != nil:
		return f.Scope.Path + "#" + f.Scope.Agent
	}
	return ""
}

// chatAttrs are a visit's usage as the GenAI conventions name it; a figure
// the driver did not report is left out, not sent as 0.
func chatAttrs(f *rundir.Fact) []attribute.KeyValue {
	attrs := []attribute.KeyValue{attribute.String("gen_ai.operation.name", "chat"), attribute.String("flow.visit", f.Visit)}
	if f.Model != "" {
		attrs = append(attrs, attribute.String("gen_ai.request.model", f.Model))
	}
	u := f.Usage
	for _, n := range []struct {
		key string
		v   *int64
	}{
		{"gen_ai.usage.input_tokens", u.Input},
		{"gen_ai.usage.output_tokens", u.Output},
		{"gen_ai.usage.cache_read.input_tokens", u.CacheRead},
		{"gen_ai.usage.cache_creation.input_tokens", u.CacheWrite},
		{"flow.usage.turns", u.Turns},
	} {
		if n.v != nil {
			attrs = append(attrs, attribute.Int64(n.key, *n.v))
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

func failure(f *rundir.Fact) string {
	if f.Error != nil {
		return string(f.Error.Kind) + ": " + f.Error.Message
	}
	return "failed"
}
