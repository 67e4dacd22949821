package codex

import (
	"context"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/delegatetest"
	"github.com/flowrun/flow/internal/modelserver"
)

// TestCodexDelegate runs a turn whose model calls the delegate tool, which
// Codex reaches through the real `flow mcp-delegate`.
func TestCodexDelegate(t *testing.T) {
	bin := clitest.Binary(t, "codex")
	flow := delegatetest.FlowBinary(t)
	fake := delegatetest.Start(t, func(r engine.DelegateRequest) engine.DelegateReply {
		return engine.DelegateReply{Answer: "scout-answer-4410: the flake is in TestRace"}
	})
	s := modelserver.Start(t)
	s.Handle(delegatetest.Model(`{"agent":"scout","task":"find the flaky test"}`, "scout-answer-4410", "The scout found it."))
	tn := turn(t, s)
	const token = "tok-codex-0123456789"
	tn.Delegate = &engine.Delegation{Agents: []string{"scout", "tester"}, Socket: fake.Socket(),
		Token: token, Server: []string{flow, "mcp-delegate"}}
	res, err := New(Options{Binary: bin}).Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed || res.Output != "The scout found it." {
		reqs := s.Requests()
		last := string(reqs[len(reqs)-1].Body)
		if i := strings.Index(last, "function_call_output"); i >= 0 {
			last = last[i:min(len(last), i+600)]
		}
		t.Fatalf("Turn = %+v, %v\nthe last request's tool output: %.600s", res, err, last)
	}
	calls := fake.Calls()
	if len(calls) != 1 || calls[0] != (engine.DelegateRequest{Token: token, Agent: "scout", Task: "find the flaky test"}) {
		t.Fatalf("calls = %+v", calls)
	}
	var gen []modelserver.Request
	for _, r := range s.Requests() {
		if r.Path == "/v1/responses" {
			gen = append(gen, r)
		}
	}
	if len(gen) < 2 {
		t.Fatalf("%d generation requests, want the call and the answer", len(gen))
	}
	t.Logf("Codex offers the tool as %q", delegatetest.ToolName(gen[0]))
	if last := string(gen[len(gen)-1].Body); !strings.Contains(last, "scout-answer-4410: the flake is in TestRace") {
		t.Errorf("the tool's result did not reach the model: %.800s", last)
	}
	// The token is handed on in the environment, never on a command line
	// the transcript records.
	clitest.NoKey(t, tn.Home, token)
}
