package main

import (
	"fmt"
	"strings"
	"testing"
)

// TestToolSpansInJaeger runs a pi and a Codex turn that call a tool once,
// through the real CLIs against the scripted model server, and reads
// their traces back from Jaeger (docs/tracing.md): each has an
// execute_tool span for the call (protocol pi, codex); pi's stream shows
// each request's usage, so its visit has a chat span per request, two;
// Codex's shows the turn's only, so one. The chat spans' input tokens sum
// to the journal's input with the cache.
func TestToolSpansInJaeger(t *testing.T) {
	t.Parallel()
	j := startJaegerFull(t)
	for _, c := range []struct {
		driver, protocol string
		chats            int
	}{{"pi", "pi", 2}, {"codex", "codex", 1}} {
		t.Run(c.driver, func(t *testing.T) {
			dc := driverByName(t, c.driver)
			s := billedServer(t, dc)
			env, frontmatter := dc.setup(t, s.URL())
			agent := "---\nname: helper\ndescription: Helps with the test\ndriver: " + c.driver + "\nmodel: test-model\ntools: read, ls, bash\n" + frontmatter + "---\nYou help, briefly.\n"
			env = append(env, "OTEL_EXPORTER_OTLP_ENDPOINT="+j.otlp, "OTEL_EXPORTER_OTLP_PROTOCOL=", "TRACEPARENT=")
			flow := "f-" + c.driver
			run, out, err := flowRun(t, map[string]string{"agents/helper.md": agent, flow + ".yaml": strings.Replace(billedFlow(0), "name: f\n", "name: "+flow+"\n", 1), "marker.txt": "x"}, env, flow+".yaml")
			if err != nil || strings.Contains(out, "traces not sent") {
				t.Fatalf("flow run: %v\n%s", err, out)
			}
			u := endUsage(t, run, "look")
			byTrace := jaegerTraces(t, j.query, func(m map[string][]*jaegerSpan) bool { return workflows(m, flow) == 1 })
			var tools, chats int
			var input int64
			for _, spans := range byTrace {
				if workflowOf(spans) != flow {
					continue
				}
				for _, sp := range spans {
					switch {
					case strings.HasPrefix(sp.OperationName, "execute_tool "):
						tools++
						if sp.tag("flow.tool.protocol") != c.protocol || sp.tag("gen_ai.tool.call.id") == "" || sp.tag("gen_ai.provider.name") == "" {
							t.Errorf("%s: provider %q, protocol %q, call id %q", sp.OperationName, sp.tag("gen_ai.provider.name"), sp.tag("flow.tool.protocol"), sp.tag("gen_ai.tool.call.id"))
						}
					case strings.HasPrefix(sp.OperationName, "chat"):
						chats++
						var n int64
						if _, err := fmt.Sscan(sp.tag("gen_ai.usage.input_tokens"), &n); err != nil {
							t.Errorf("chat: input tokens %q: %v", sp.tag("gen_ai.usage.input_tokens"), err)
						}
						input += n
					}
				}
			}
			if tools != 1 || chats != c.chats {
				t.Errorf("%d execute_tool and %d chat spans, want 1 and %d", tools, chats, c.chats)
			}
			if want := deref(u.Input) + deref(u.CacheRead) + deref(u.CacheWrite); input != want {
				t.Errorf("the chat spans' input tokens sum to %d; the journal's input with the cache is %d", input, want)
			}
		})
	}
}
