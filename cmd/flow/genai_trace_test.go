package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/devserver"
	"github.com/flowrun/flow/internal/modelserver"
	"github.com/flowrun/flow/rundir"
)

// jaegerTraces are every trace of flow Jaeger holds, by trace id, once
// ok holds of them (or the test fails after 30 s).
func jaegerTraces(t *testing.T, query string, ok func(map[string][]*jaegerSpan) bool) map[string][]*jaegerSpan {
	t.Helper()
	var byTrace map[string][]*jaegerSpan
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(300 * time.Millisecond) {
		byTrace = map[string][]*jaegerSpan{}
		resp, err := http.Get(query + "/api/traces?service=flow&limit=100")
		if err == nil {
			var body struct {
				Data []struct {
					Spans []map[string]any `json:"spans"`
				} `json:"data"`
			}
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			for _, tr := range body.Data {
				for _, raw := range tr.Spans {
					b, _ := json.Marshal(raw)
					s := &jaegerSpan{raw: raw}
					_ = json.Unmarshal(b, s)
					byTrace[s.TraceID] = append(byTrace[s.TraceID], s)
				}
			}
		}
		if ok(byTrace) {
			return byTrace
		}
		if time.Now().After(deadline) {
			t.Fatalf("Jaeger's traces after 30 s are not what the test waits for: %d traces", len(byTrace))
		}
	}
}

// workflows counts the traces whose root is invoke_workflow flow.
func workflows(byTrace map[string][]*jaegerSpan, flow string) int {
	n := 0
	for _, spans := range byTrace {
		for _, s := range spans {
			if s.OperationName == "invoke_workflow "+flow && s.parent() == "" {
				n++
			}
		}
	}
	return n
}

// TestGenAIInJaeger runs, against Jaeger's all-in-one of
// tools/jaeger/local.yaml, a flow of an OpenAI-compatible agent whose
// server bills 63 input tokens, 3 of them read from the cache, and of an
// exec agent that fails, then resumes it; a sweep of two cells; and a run flow serve
// starts. It reads back, from Jaeger's query API, each attribute the GenAI
// conventions ask for — a trace per run and resume, the workflow's name, gen_ai.provider.name, the
// model, input tokens with the cache, error.type the failure kind — a
// trace per sweep cell and one for the served run, each cell's agents
// with their own run's TRACEPARENT, and the GenAI metrics from Jaeger's
// Prometheus endpoint.
func TestGenAIInJaeger(t *testing.T) {
	t.Parallel()
	j := startJaegerFull(t)
	ms := modelserver.Start(t)
	ms.Handle(func(modelserver.Request) modelserver.Reply {
		return modelserver.Reply{Text: "fine", Input: 63, Output: 5, CacheRead: 3}
	})
	d := newSweepDir(t, map[string]string{
		"agents/remote.md": "---\nname: remote\ndescription: asks a server\ndriver: openai\nmodel: m1\nbase_url: " + ms.URL() + "/v1\napi_key_env: GENAI_TEST_KEY\n---\nAnswer.\n",
		"agents/bad.md":    "---\nname: bad\ndescription: fails\ndriver: exec\ncommand: [./bad.sh]\n---\nFail.\n",
		"agents/bad.sh":    "#!/usr/bin/env bash\ncat >/dev/null\necho broken >&2\nexit 3\n",
		"agents/w.md":      "---\nname: w\ndescription: works\ndriver: exec\nmodel: small\ncommand: [./w.sh]\n---\nWork.\n",
		"agents/w.sh": "#!/usr/bin/env bash\ncat >/dev/null\necho \"$TRACEPARENT\" >> \"$STATE/cells\"\n" +
			"echo 'FLOW_USAGE {\"input\":1,\"output\":1}' >&2\necho done\n",
		"genai.yaml": "name: genai\nagents: [./agents]\nnodes:\n  - {id: ask, agent: remote, prompt: x}\n  - {id: fail, agent: bad, prompt: y}\n",
		"cells.yaml": "name: cells\nagents: [./agents]\nnodes:\n  - {id: a, agent: w, prompt: x}\n",
	})
	env := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + j.otlp, "OTEL_EXPORTER_OTLP_PROTOCOL=", "TRACEPARENT=", "GENAI_TEST_KEY=genai-test-key-long"}
	c := d.cmd("run", "genai.yaml")
	c.Env = append(c.Env, env...)
	if out, err := c.CombinedOutput(); err == nil || strings.Contains(string(out), "warning") {
		t.Fatalf("flow run of a failing flow: %v\n%s", err, out)
	}
	c = d.cmd("resume", filepath.Base(runOfFlow(t, d.dir, "genai")))
	c.Env = append(c.Env, env...)
	if out, err := c.CombinedOutput(); err == nil || strings.Contains(string(out), "warning") {
		t.Fatalf("flow resume of the failed run: %v\n%s", err, out)
	}
	c = d.cmd("sweep", "cells.yaml", "--model", "alpha,beta")
	c.Env = append(c.Env, env...)
	if out, err := c.CombinedOutput(); err != nil || strings.Contains(string(out), "warning") {
		t.Fatalf("flow sweep: %v\n%s", err, out)
	}
	writeFlows(t, d.dir, map[string]string{"served.yaml": "name: served\nagents: [../agents]\nnodes:\n  - {id: a, agent: w, prompt: x}\n"})
	srv := startServeEnv(t, d.bin, d.dir, append(env, "FLOW_RUNS_DIR="+filepath.Join(d.dir, "runs"), "STATE="+d.dir))
	if code, m := srv.call("POST", "/api/flows/served/runs", ""); code != http.StatusAccepted {
		t.Fatalf("starting a served run: %d %v\n%s", code, m, srv.stderr.String())
	}

	byTrace := jaegerTraces(t, j.query, func(m map[string][]*jaegerSpan) bool {
		return workflows(m, "genai") == 2 && workflows(m, "cells") == 2 && workflows(m, "served") == 1
	})
	var failKind string
	for _, f := range journal(t, runOfFlow(t, d.dir, "genai")) {
		if f.Type == record.FactEnd && f.Visit == "fail" && f.Error != nil {
			failKind = string(f.Error.Kind)
		}
	}
	if failKind == "" {
		t.Fatal("the failing visit's end fact names no failure kind")
	}
	seen := map[string]bool{}
	for _, spans := range byTrace {
		for _, s := range spans {
			tags := func(kv ...string) {
				for i := 0; i < len(kv); i += 2 {
					if got := s.tag(kv[i]); got != kv[i+1] {
						t.Errorf("%s: %s = %q, want %q", s.OperationName, kv[i], got, kv[i+1])
					}
				}
			}
			seen[s.OperationName] = true
			switch s.OperationName {
			case "invoke_workflow genai":
				tags("gen_ai.operation.name", "invoke_workflow", "gen_ai.workflow.name", "genai", "error.type", failKind, "flow.name", "")
			case "invoke_agent remote":
				tags("gen_ai.operation.name", "invoke_agent", "gen_ai.provider.name", "openai", "gen_ai.request.model", "m1", "error.type", "")
			case "chat m1":
				tags("gen_ai.operation.name", "chat", "gen_ai.provider.name", "openai", "gen_ai.request.model", "m1",
					"gen_ai.usage.input_tokens", "63", "gen_ai.usage.cache_read.input_tokens", "3", "gen_ai.usage.output_tokens", "5")
			case "invoke_agent bad":
				tags("gen_ai.provider.name", "exec", "error.type", failKind, "otel.status_code", "ERROR")
			case "invoke_agent w":
				tags("gen_ai.provider.name", "exec", "gen_ai.agent.name", "w")
			}
		}
	}
	for _, op := range []string{"invoke_workflow genai", "invoke_agent remote", "chat m1", "invoke_agent bad", "invoke_workflow cells", "invoke_workflow served"} {
		if !seen[op] {
			t.Errorf("no %s span in Jaeger", op)
		}
	}
	// Each cell's agent had its own run's trace context.
	b, err := os.ReadFile(filepath.Join(d.dir, "cells"))
	if err != nil {
		t.Fatal(err)
	}
	cells := map[string]bool{}
	for _, tp := range strings.Fields(string(b)) {
		if parts := strings.Split(tp, "-"); len(parts) == 4 {
			cells[strings.TrimLeft(parts[1], "0")] = true
		}
	}
	for id, spans := range byTrace {
		if spans[0].tag("gen_ai.workflow.name") == "cells" || workflowOf(spans) == "cells" || workflowOf(spans) == "served" {
			if !cells[strings.TrimLeft(id, "0")] {
				t.Errorf("the trace %s of a %s run is in no agent's TRACEPARENT (%q)", id, workflowOf(spans), b)
			}
		}
	}
	resp, err := http.Get(j.metrics)
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"gen_ai_client_token_usage", "gen_ai_client_operation_duration", `gen_ai_provider_name="openai"`,
		`gen_ai_token_type="input"`, `error_type="` + failKind + `"`} {
		if !strings.Contains(string(metrics), want) {
			t.Errorf("Jaeger's Prometheus endpoint has no %s:\n%s", want, grepLines(string(metrics), "gen_ai"))
		}
	}
}

// workflowOf is the flow of a trace's invoke_workflow span.
func workflowOf(spans []*jaegerSpan) string {
	for _, s := range spans {
		if w, ok := strings.CutPrefix(s.OperationName, "invoke_workflow "); ok {
			return w
		}
	}
	return ""
}

// runOfFlow is the one run directory of flow under dir/runs.
func runOfFlow(t *testing.T, dir, flow string) string {
	t.Helper()
	runs, _ := runDirsIn(filepath.Join(dir, "runs"))
	for _, r := range runs {
		if snap, err := rundir.ReadSnapshot(r); err == nil && snap.Flow == flow {
			return r
		}
	}
	t.Fatalf("no run of %s in %v", flow, runs)
	return ""
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestTemporalWorkersJoinTheTrace: a run started with --temporal under
// OTEL_EXPORTER_OTLP_ENDPOINT carries its trace context to the worker,
// which has no tracing of its own configured: the agent the worker runs
// gets the run span's TRACEPARENT, and the run's trace reaches Jaeger.
func TestTemporalWorkersJoinTheTrace(t *testing.T) {
	srv := devserver.Start(t)
	j := startJaegerFull(t)
	d := newSweepDir(t, map[string]string{
		"agents/w.md": "---\nname: w\ndescription: works\ndriver: exec\nmodel: small\ncommand: [./w.sh]\n---\nWork.\n",
		"agents/w.sh": "#!/usr/bin/env bash\ncat >/dev/null\necho \"$TRACEPARENT\" >> \"$STATE/traceparent\"\n" +
			"echo 'FLOW_USAGE {\"input\":2,\"output\":1}' >&2\necho done\n",
		"remote.yaml": "name: remote\nagents: [./agents]\nnodes:\n  - {id: a, agent: w, prompt: x}\n",
	})
	startWorkerEnv(t, d.bin, d.dir, srv.Address, "traced", []string{"STATE=" + d.dir, "TRACEPARENT="})
	c := d.cmd("run", "--temporal", srv.Address, "--task-queue", "traced", "remote.yaml")
	c.Env = append(c.Env, "OTEL_EXPORTER_OTLP_ENDPOINT="+j.otlp, "OTEL_EXPORTER_OTLP_PROTOCOL=", "TRACEPARENT=")
	if out, err := c.CombinedOutput(); err != nil || strings.Contains(string(out), "traces not sent") {
		t.Fatalf("flow run --temporal: %v\n%s\n%s", err, out, srv.Log())
	}
	byTrace := jaegerTraces(t, j.query, func(m map[string][]*jaegerSpan) bool { return workflows(m, "remote") == 1 })
	var run *jaegerSpan
	for _, spans := range byTrace {
		for _, s := range spans {
			if s.OperationName == "invoke_workflow remote" {
				run = s
			}
		}
	}
	b, err := os.ReadFile(filepath.Join(d.dir, "traceparent"))
	if err != nil {
		t.Fatal(err)
	}
	want := "00-" + fmt.Sprintf("%032s", run.TraceID) + "-" + fmt.Sprintf("%016s", run.SpanID) + "-"
	if tp := strings.TrimSpace(string(b)); !strings.HasPrefix(tp, want) {
		t.Errorf("the worker's agent had TRACEPARENT %q, want the run span's %s…", tp, want)
	}
}

// TestClaudeTurnInJaeger: a Claude Code turn that calls a tool, traced to
// Jaeger: an execute_tool span for the call its stream showed and a chat
// span per request, gen_ai.provider.name anthropic, whose input tokens sum
// to what the journal's end fact recorded, the cache included.
func TestClaudeTurnInJaeger(t *testing.T) {
	t.Parallel()
	j := startJaegerFull(t)
	dc := driverByName(t, "claude")
	s := billedServer(t, dc)
	env, frontmatter := dc.setup(t, s.URL())
	agent := "---\nname: helper\ndescription: Helps with the test\ndriver: claude\nmodel: test-model\ntools: read, ls, bash\n" + frontmatter + "---\nYou help, briefly.\n"
	env = append(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+j.otlp, "OTEL_EXPORTER_OTLP_PROTOCOL=", "TRACEPARENT=")
	run, out, err := flowRun(t, map[string]string{"agents/helper.md": agent, "f.yaml": billedFlow(0), "marker.txt": "x"}, env, "f.yaml")
	if err != nil || strings.Contains(out, "traces not sent") {
		t.Fatalf("flow run: %v\n%s", err, out)
	}
	u := endUsage(t, run, "look")
	byTrace := jaegerTraces(t, j.query, func(m map[string][]*jaegerSpan) bool { return workflows(m, "f") == 1 })
	var tools, chats int
	var input int64
	for _, spans := range byTrace {
		for _, sp := range spans {
			switch {
			case strings.HasPrefix(sp.OperationName, "execute_tool "):
				tools++
				if sp.tag("gen_ai.provider.name") != "anthropic" || sp.tag("flow.tool.protocol") != "claude" || sp.tag("gen_ai.tool.call.id") == "" {
					t.Errorf("%s: provider %q, protocol %q, call id %q", sp.OperationName, sp.tag("gen_ai.provider.name"), sp.tag("flow.tool.protocol"), sp.tag("gen_ai.tool.call.id"))
				}
			case sp.OperationName == "chat test-model":
				chats++
				var n int64
				if _, err := fmt.Sscan(sp.tag("gen_ai.usage.input_tokens"), &n); err != nil {
					t.Errorf("chat: input tokens %q: %v", sp.tag("gen_ai.usage.input_tokens"), err)
				}
				input += n
				if sp.tag("gen_ai.provider.name") != "anthropic" {
					t.Errorf("chat: provider %q", sp.tag("gen_ai.provider.name"))
				}
			}
		}
	}
	if tools != 1 || chats != 2 {
		t.Errorf("%d execute_tool and %d chat spans, want 1 and 2 (the call, and the requests before and after it)", tools, chats)
	}
	if want := deref(u.Input) + deref(u.CacheRead) + deref(u.CacheWrite); input != want {
		t.Errorf("the chat spans' input tokens sum to %d; the journal's input with the cache is %d", input, want)
	}
}
