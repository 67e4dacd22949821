package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/rundir"
)

// jaeger is a Jaeger all-in-one of tools/jaeger/local.yaml — the one
// docs/tracing.md starts — on free loopback ports.
type jaeger struct {
	otlp, query, metrics string
	env                  []string // the variables that give it its ports
}

// jaegerEnv picks the free ports of a Jaeger of tools/jaeger/local.yaml.
func jaegerEnv(t *testing.T) *jaeger {
	qp, gp, op, mp := freePort(t), freePort(t), freePort(t), freePort(t)
	return &jaeger{
		otlp: fmt.Sprintf("http://127.0.0.1:%d", op), query: fmt.Sprintf("http://127.0.0.1:%d", qp),
		metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", mp),
		env: []string{fmt.Sprintf("JAEGER_QUERY_PORT=%d", qp), fmt.Sprintf("JAEGER_QUERY_GRPC_PORT=%d", gp),
			fmt.Sprintf("JAEGER_OTLP_PORT=%d", op), fmt.Sprintf("JAEGER_METRICS_PORT=%d", mp)},
	}
}

// jaegerLocal is tools/jaeger/local.yaml.
func jaegerLocal(t *testing.T) string {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(wd, "..", "..", "tools", "jaeger", "local.yaml")
}

// startJaeger runs the collector for the test's life and returns its OTLP
// HTTP endpoint and its query API's base URL, once the API answers.
func startJaeger(t *testing.T) (otlp, query string) {
	j := startJaegerFull(t)
	return j.otlp, j.query
}

func startJaegerFull(t *testing.T) *jaeger {
	t.Helper()
	bin := clitest.Tool(t, "jaeger")
	j := jaegerEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--config", jaegerLocal(t))
	cmd.Env = append(os.Environ(), j.env...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if resp, err := http.Get(j.query + "/api/services"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger's query API did not answer in 60 s:\n%s", log.String())
		}
	}
	return j
}

// TestLocalJaegerListensOnLoopback: every endpoint of the configuration
// docs/tracing.md starts Jaeger with is on 127.0.0.1.
func TestLocalJaegerListensOnLoopback(t *testing.T) {
	b, err := os.ReadFile(jaegerLocal(t))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "endpoint:"); ok {
			n++
			if !strings.HasPrefix(strings.TrimSpace(v), "127.0.0.1:") {
				t.Errorf("tools/jaeger/local.yaml listens beyond loopback: %s", line)
			}
		}
	}
	if n != 4 {
		t.Errorf("%d endpoints in tools/jaeger/local.yaml, want 4 (OTLP, query HTTP and gRPC, metrics)", n)
	}
}

type jaegerSpan struct {
	TraceID       string `json:"traceID"`
	SpanID        string `json:"spanID"`
	OperationName string `json:"operationName"`
	References    []struct {
		RefType string `json:"refType"`
		SpanID  string `json:"spanID"`
	} `json:"references"`
	raw map[string]any
}

func (s *jaegerSpan) parent() string {
	for _, r := range s.References {
		if r.RefType == "CHILD_OF" {
			return r.SpanID
		}
	}
	return ""
}

// tag is the span's tag as text ("" when absent).
func (s *jaegerSpan) tag(key string) string {
	tags, _ := s.raw["tags"].([]any)
	for _, t := range tags {
		m, _ := t.(map[string]any)
		if m["key"] == key {
			return fmt.Sprint(m["value"])
		}
	}
	return ""
}

// traces queries the collector for flow's spans until want have arrived.
func traces(t *testing.T, query string, want int) []*jaegerSpan {
	t.Helper()
	var spans []*jaegerSpan
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		spans = nil
		resp, err := http.Get(query + "/api/traces?service=flow&limit=20")
		if err == nil {
			var body struct {
				Data []struct {
					Spans []map[string]any `json:"spans"`
				} `json:"data"`
			}
			err = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			for _, tr := range body.Data {
				for _, raw := range tr.Spans {
					b, _ := json.Marshal(raw)
					s := &jaegerSpan{raw: raw}
					_ = json.Unmarshal(b, s)
					spans = append(spans, s)
				}
			}
		}
		if err == nil && len(spans) >= want {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector holds %d of flow's spans after 30 s, want %d (last error %v)", len(spans), want, err)
		}
	}
}

// TestTracesReachACollector runs a three-visit flow — two visits of one
// agent in a memory scope, one of another — with OTEL_EXPORTER_OTLP_ENDPOINT
// set to a real Jaeger, and reads the trace back from Jaeger's query API:
// one invoke_workflow span, an invoke_agent span per visit under it with
// the memory session as gen_ai.conversation.id, a chat span under each
// carrying the visit's usage, tokens that sum to usage.json's, and the
// run's trace in the agents' TRACEPARENT.
func TestTracesReachACollector(t *testing.T) {
	t.Parallel()
	otlp, query := startJaeger(t)
	report := func(name, usage string) string {
		return "#!/usr/bin/env bash\ncat >/dev/null\necho \"$TRACEPARENT\" >> \"$STATE/traceparent\"\n" +
			"echo 'FLOW_USAGE " + usage + "' >&2\necho " + name + " done\n"
	}
	d := newSweepDir(t, map[string]string{
		"agents/w.md": "---\nname: w\ndescription: works\ndriver: exec\nmodel: small\ncommand: [./w.sh]\n---\nWork.\n",
		"agents/w.sh": report("w", `{"id":"m1","input":100,"output":20,"cache_read":400,"cache_write":30,"cost":0.03}`),
		"agents/v.md": "---\nname: v\ndescription: checks\ndriver: exec\ncommand: [./v.sh]\n---\nCheck.\n",
		"agents/v.sh": report("v", `{"input":7,"output":3}`),
		"traced.yaml": "name: traced\nagents: [./agents]\nnodes:\n" +
			"  - {id: a, agent: w, memory: flow, prompt: x}\n" +
			"  - {id: b, agent: w, memory: flow, prompt: y}\n" +
			"  - {id: c, agent: v, prompt: z}\n",
	})
	c := d.cmd("run", "traced.yaml")
	c.Env = append(c.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+otlp, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "TRACEPARENT=")
	if out, err := c.CombinedOutput(); err != nil || strings.Contains(string(out), "warning") {
		t.Fatalf("flow run: %v\n%s", err, out)
	}
	spans := traces(t, query, 7)
	if len(spans) != 7 {
		t.Fatalf("%d spans, want 7 (a run, 3 agent visits, 3 chats)", len(spans))
	}
	byID := map[string]*jaegerSpan{}
	var run *jaegerSpan
	for _, s := range spans {
		byID[s.SpanID] = s
		if s.OperationName == "invoke_workflow traced" {
			run = s
		}
	}
	if run == nil || run.parent() != "" || run.tag("gen_ai.operation.name") != "invoke_workflow" {
		t.Fatalf("no root invoke_workflow traced span: %+v", spans)
	}
	var sum [4]int64
	keys := []string{"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens", "gen_ai.usage.cache_read.input_tokens", "gen_ai.usage.cache_creation.input_tokens"}
	agents, sessions := map[string]int{}, map[string]string{}
	for _, s := range spans {
		switch {
		case s == run:
		case strings.HasPrefix(s.OperationName, "invoke_agent "):
			agent := strings.TrimPrefix(s.OperationName, "invoke_agent ")
			agents[agent]++
			if s.parent() != run.SpanID || s.tag("gen_ai.agent.name") != agent {
				t.Errorf("%s (visit %s) is not the run's child, or names another agent", s.OperationName, s.tag("flow.visit"))
			}
			sessions[s.tag("flow.visit")] = s.tag("gen_ai.conversation.id")
		case s.OperationName == "chat small" || s.OperationName == "chat":
			// v names no model.
			p := byID[s.parent()]
			if model := s.tag("gen_ai.request.model"); (model == "small") != (p != nil && p.OperationName == "invoke_agent w") {
				t.Errorf("chat span %q (model %q) under %+v", s.OperationName, model, p)
			}
			if p == nil || !strings.HasPrefix(p.OperationName, "invoke_agent ") || p.tag("flow.visit") != s.tag("flow.visit") {
				t.Errorf("chat span of %s is not under its visit's invoke_agent", s.tag("flow.visit"))
			}
			for i, k := range keys {
				if v := s.tag(k); v != "" {
					var n int64
					_, _ = fmt.Sscan(v, &n)
					sum[i] += n
				}
			}
		default:
			t.Errorf("unexpected span %q", s.OperationName)
		}
	}
	if agents["w"] != 2 || agents["v"] != 1 {
		t.Errorf("invoke_agent spans per agent: %v, want w 2 and v 1", agents)
	}
	if sessions["a"] == "" || sessions["a"] != sessions["b"] || sessions["c"] != "" {
		t.Errorf("gen_ai.conversation.id by visit %v: a and b share the flow's memory session, c has none", sessions)
	}
	runs, _ := runDirsIn(filepath.Join(d.dir, "runs"))
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	b, err := os.ReadFile(filepath.Join(runs[0], "usage.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ledger rundir.Totals
	if err := json.Unmarshal(b, &ledger); err != nil {
		t.Fatal(err)
	}
	u := ledger.Total
	// gen_ai.usage.input_tokens counts the cache too; the ledger's input
	// does not.
	want := [4]int64{deref(u.Input) + deref(u.CacheRead) + deref(u.CacheWrite), deref(u.Output), deref(u.CacheRead), deref(u.CacheWrite)}
	if sum != want || want != [4]int64{207 + 800 + 60, 43, 800, 60} {
		t.Errorf("the spans' gen_ai.usage sums (input, output, cache read, cache creation) are %v; usage.json says %v", sum, want)
	}
	if run.tag("flow.run.id") != filepath.Base(runs[0]) {
		t.Errorf("flow.run.id is %q, the run %s", run.tag("flow.run.id"), filepath.Base(runs[0]))
	}
	tp, err := os.ReadFile(filepath.Join(d.dir, "traceparent"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(tp))
	if len(lines) != 3 {
		t.Fatalf("the agents saw TRACEPARENT %q", tp)
	}
	for _, l := range lines {
		// Jaeger leaves out the trace id's leading zeros.
		if !strings.HasPrefix(l, "00-"+fmt.Sprintf("%032s", run.TraceID)+"-"+fmt.Sprintf("%016s", run.SpanID)+"-") {
			t.Errorf("an agent's TRACEPARENT %q is not the run span's (trace %s, span %s)", l, run.TraceID, run.SpanID)
		}
	}
}

func deref(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// tracingSetup gives docs/tracing.md's Jaeger free ports: the documented
// command runs with the variables of tools/jaeger/local.yaml set to free
// ones, and the documented localhost:4318, :16686 and :8889 are those.
func tracingSetup(t *testing.T, d *docSession) {
	bin := clitest.Tool(t, "jaeger")
	j := jaegerEnv(t)
	host := func(u string) string { return strings.TrimSuffix(strings.TrimPrefix(u, "http://"), "/metrics") }
	d.subst = append(d.subst, ".tools/bin/jaeger", bin, "tools/jaeger/local.yaml", jaegerLocal(t),
		"localhost:4318", host(j.otlp), "localhost:16686", host(j.query), "localhost:8889", host(j.metrics))
	d.env = append(d.env, "TRACEPARENT=", "OTEL_EXPORTER_OTLP_PROTOCOL=")
	d.env = append(d.env, j.env...)
}

func tracingSteps(d *docSession) []docStep {
	t := d.t
	return []docStep{
		{line: ".tools/bin/jaeger --config tools/jaeger/local.yaml &", run: func(d *docSession, line string) {
			d.start(strings.TrimSuffix(line, " &"))
			query := "http://" + d.expand("localhost:16686")
			d.waitFor("jaeger's query API", time.Minute, func() bool {
				resp, err := http.Get(query + "/api/services")
				if err != nil {
					return false
				}
				resp.Body.Close()
				return resp.StatusCode == 200
			})
		}},
		{line: "OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 go run ./cmd/flow run examples/count-file.yaml", run: func(d *docSession, line string) {
			if out := d.sh(line, 2*time.Minute); !strings.Contains(out, "succeeded") || strings.Contains(out, "warning") {
				t.Fatalf("%s:\n%s", line, out)
			}
		}},
		{line: "curl -s 'http://localhost:16686/api/traces?service=flow'", run: func(d *docSession, line string) {
			var out string
			d.waitFor("the run's trace in Jaeger", 30*time.Second, func() bool {
				out = d.sh(line, 10*time.Second)
				return strings.Contains(out, `"invoke_workflow count-file"`) && strings.Contains(out, `"invoke_agent summarizer"`)
			})
		}},
		{line: "curl -s http://localhost:8889/metrics | grep gen_ai_client", run: func(d *docSession, line string) {
			var out string
			d.waitFor("flow's metrics in Jaeger's Prometheus endpoint", 30*time.Second, func() bool {
				out = d.sh(line+" || true", 10*time.Second)
				return strings.Contains(out, "gen_ai_client_operation_duration") && strings.Contains(out, `gen_ai_operation_name="invoke_agent"`)
			})
		}},
	}
}
