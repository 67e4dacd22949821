package trace

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/flowrun/flow/engine/record"
)

func ptr[T any](v T) *T { return &v }

// TestVisitsFromTheJournal: an agent visit becomes invoke_agent with a chat
// child carrying the usage the driver reported (and nothing it did not);
// a visit of another kind without usage makes no span; a visit that ran
// twice (a resume) gets a span per attempt, each from its own start.
func TestVisitsFromTheJournal(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	r := &Run{tp: tp, tr: tp.Tracer("test")}
	r.ctx, r.span = r.tr.Start(context.Background(), "invoke_workflow f")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	facts := []*record.Fact{
		{Type: record.FactRun, Time: at(0), Status: record.StatusRunning},
		{Type: record.FactStart, Time: at(1), Visit: "a"},
		{Type: record.FactEnd, Time: at(2), Visit: "a", Agent: "w", Model: "m1", OK: ptr(false), Session: "s1",
			Usage: &record.Usage{Input: ptr[int64](5), CacheRead: ptr[int64](2)}},
		{Type: record.FactStart, Time: at(3), Visit: "r"},
		{Type: record.FactEnd, Time: at(4), Visit: "r", OK: ptr(true)},
		{Type: record.FactStart, Time: at(5), Visit: "a"},
		{Type: record.FactEnd, Time: at(7), Visit: "a", Agent: "w", Model: "m1", OK: ptr(true), Scope: &record.Scope{Path: "flow", Agent: "w"},
			Usage: &record.Usage{Input: ptr[int64](1), Output: ptr[int64](1)}},
		{Type: record.FactRun, Time: at(8), Status: record.StatusSucceeded},
	}
	if end := r.visits(facts, at(99)); !end.Equal(at(8)) {
		t.Errorf("the run ends at %v, want its end fact's %v", end, at(8))
	}
	spans := rec.Ended()
	if len(spans) != 4 {
		t.Fatalf("%d spans, want 4", len(spans))
	}
	want := []struct {
		name         string
		start, end   int
		conversation string
		attrs        map[string]int64
	}{
		// input_tokens counts the cache: 5 beyond it, 2 read from it.
		{"chat m1", 1, 2, "", map[string]int64{"gen_ai.usage.input_tokens": 7, "gen_ai.usage.cache_read.input_tokens": 2}},
		{"invoke_agent w", 1, 2, "s1", nil},
		{"chat m1", 5, 7, "", map[string]int64{"gen_ai.usage.input_tokens": 1, "gen_ai.usage.output_tokens": 1}},
		{"invoke_agent w", 5, 7, "flow#w", nil},
	}
	for i, w := range want {
		s := spans[i]
		if s.Name() != w.name || !s.StartTime().Equal(at(w.start)) || !s.EndTime().Equal(at(w.end)) {
			t.Errorf("span %d: %s %v–%v, want %s %v–%v", i, s.Name(), s.StartTime(), s.EndTime(), w.name, at(w.start), at(w.end))
		}
		got := map[string]int64{}
		conv := ""
		for _, kv := range s.Attributes() {
			switch string(kv.Key) {
			case "gen_ai.conversation.id":
				conv = kv.Value.AsString()
			case "gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_creation.input_tokens":
				got[string(kv.Key)] = kv.Value.AsInt64()
			}
		}
		if conv != w.conversation {
			t.Errorf("span %d: conversation %q, want %q", i, conv, w.conversation)
		}
		if len(got) != len(w.attrs) {
			t.Errorf("span %d: usage %v, want %v", i, got, w.attrs)
		}
		for k, v := range w.attrs {
			if got[k] != v {
				t.Errorf("span %d: %s = %d, want %d", i, k, got[k], v)
			}
		}
	}
	if spans[0].Parent().SpanID() != spans[1].SpanContext().SpanID() || spans[1].Parent().SpanID() != r.span.SpanContext().SpanID() {
		t.Errorf("chat is not under invoke_agent, or invoke_agent not under the run")
	}
}

// TestToolSpans: a native turn's tool facts become execute_tool spans
// under its invoke_agent span, each from the call's start to its fact.
func TestToolSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	r := &Run{tp: tp, tr: tp.Tracer("test")}
	r.ctx, r.span = r.tr.Start(context.Background(), "invoke_workflow f")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	facts := []*record.Fact{
		{Type: record.FactStart, Time: at(1), Visit: "fix"},
		{Type: record.FactTool, Time: at(3), Visit: "fix", Tool: &record.ToolCall{Name: "bash", ID: "c1", WallMS: 1000, Error: true}},
		{Type: record.FactTool, Time: at(5), Visit: "fix", Tool: &record.ToolCall{Name: "edit", ID: "c2", WallMS: 500}},
		{Type: record.FactEnd, Time: at(6), Visit: "fix", Agent: "coder", Model: "m", OK: ptr(true), Usage: &record.Usage{Input: ptr[int64](9)}},
	}
	r.visits(facts, at(9))
	var names []string
	var agent oteltrace.SpanContext
	for _, s := range rec.Ended() {
		names = append(names, s.Name())
		if s.Name() == "invoke_agent coder" {
			agent = s.SpanContext()
		}
	}
	if strings.Join(names, ", ") != "chat m, execute_tool bash, execute_tool edit, invoke_agent coder" {
		t.Fatalf("spans: %v", names)
	}
	bash := rec.Ended()[1]
	if !bash.StartTime().Equal(at(2)) || !bash.EndTime().Equal(at(3)) || bash.Parent().SpanID() != agent.SpanID() || bash.Status().Code != codes.Error {
		t.Errorf("execute_tool bash: %v–%v, parent %v, status %v", bash.StartTime(), bash.EndTime(), bash.Parent().SpanID(), bash.Status())
	}
}

// TestOtherProtocolsAreRefused: flow sends http/protobuf only, and says so.
func TestOtherProtocolsAreRefused(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
	if _, err := Start(context.Background(), "f", nil); err == nil {
		t.Fatal("grpc was accepted")
	}
}

// TestRequestsOfANativeTurn: a native turn's steps carry their answers'
// usage on their first calls, so its chat spans are one per request —
// each step's, and the last answer's with the rest of the visit's usage —
// and sum to the visit's usage; a step without usage leaves one span.
func TestRequestsOfANativeTurn(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	u := func(in, out int64) *record.Usage { return &record.Usage{Input: ptr(in), Output: ptr(out)} }
	end := &record.Fact{Type: record.FactEnd, Time: at(10), Visit: "fix", Usage: u(100, 30)}
	tools := []*record.Fact{
		{Type: record.FactTool, Time: at(3), Visit: "fix", Tool: &record.ToolCall{Turn: "t", Step: 1, Seq: 1, Name: "a", WallMS: 1000, Usage: u(40, 10)}},
		{Type: record.FactTool, Time: at(4), Visit: "fix", Tool: &record.ToolCall{Turn: "t", Step: 1, Seq: 2, Name: "b", WallMS: 500}},
		{Type: record.FactTool, Time: at(7), Visit: "fix", Tool: &record.ToolCall{Turn: "t", Step: 2, Seq: 3, Name: "c", WallMS: 1000, Usage: u(50, 5)}},
	}
	got := requests(end, at(1), tools)
	want := []struct {
		begin, end int
		in, out    int64
	}{{1, 2, 40, 10}, {4, 6, 50, 5}, {7, 10, 10, 15}}
	if len(got) != len(want) {
		t.Fatalf("%d requests, want %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if !g.begin.Equal(at(w.begin)) || !g.end.Equal(at(w.end)) || *g.usage.Input != w.in || *g.usage.Output != w.out {
			t.Errorf("request %d: %v–%v in %d out %d, want %d–%d in %d out %d", i, g.begin, g.end, *g.usage.Input, *g.usage.Output, w.begin, w.end, w.in, w.out)
		}
	}
	tools[2].Tool.Usage = nil
	if got := requests(end, at(1), tools); len(got) != 1 || got[0].usage != end.Usage {
		t.Errorf("a step without usage: %d requests, want the visit's one", len(got))
	}
}

// TestProviderAndErrorType: gen_ai.provider.name per driver (pi's from
// its model's provider), and a failed visit's error.type is its failure
// kind, on invoke_agent and chat.
func TestProviderAndErrorType(t *testing.T) {
	for _, c := range []struct{ driver, model, want string }{
		{"claude", "sonnet", "anthropic"}, {"codex", "", "openai"}, {"openai", "m", "openai"}, {"native", "m", "openai"},
		{"pi", "anthropic/claude-x", "anthropic"}, {"pi", "google/gemini", "gcp.gemini"}, {"pi", "flow/m", "openai"},
		{"pi", "m", "pi"}, {"exec", "", "exec"}, {"", "", "_OTHER"},
	} {
		if got := (provider{driver: c.driver}).name(c.model); got != c.want {
			t.Errorf("%s with model %q: provider %q, want %q", c.driver, c.model, got, c.want)
		}
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	r := &Run{tp: tp, tr: tp.Tracer("test"), providers: map[string]provider{"w": {driver: "claude"}}}
	r.ctx, r.span = r.tr.Start(context.Background(), "invoke_workflow f")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r.visits([]*record.Fact{
		{Type: record.FactStart, Time: t0, Visit: "a"},
		{Type: record.FactEnd, Time: t0.Add(time.Second), Visit: "a", Agent: "w", Model: "sonnet", OK: ptr(false),
			Error: &record.Failure{Kind: "timeout", Message: "slow"}, Usage: &record.Usage{Input: ptr[int64](1)}},
	}, t0)
	for _, s := range rec.Ended() {
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.String()
		}
		if attrs["gen_ai.provider.name"] != "anthropic" || attrs["error.type"] != "timeout" || s.Status().Code != codes.Error {
			t.Errorf("%s: %v, status %v", s.Name(), attrs, s.Status())
		}
	}
}
