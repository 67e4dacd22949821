package claude

import (
	"context"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/delegatetest"
	"github.com/flowrun/flow/internal/modelserver"
)

// TestE2EDelegate runs a turn whose model calls the delegate tool, which
// Claude Code reaches through the real `flow mcp-delegate`: with the
// read-only tools, and with no tool of Claude Code's own at all.
func TestE2EDelegate(t *testing.T) {
	t.Parallel()
	flow := delegatetest.FlowBinary(t)
	for _, tc := range []struct {
		name  string
		tools []string
	}{{"read-only", nil}, {"no-tools", []string{}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			delegateTurn(t, flow, tc.tools)
		})
	}
}

func delegateTurn(t *testing.T, flow string, tools []string) {
	fake := delegatetest.Start(t, func(r engine.DelegateRequest) engine.DelegateReply {
		return engine.DelegateReply{Answer: "scout-answer-7731: the flake is in TestRace"}
	})
	d, s := e2e(t)
	s.Handle(delegatetest.Model(`{"agent":"scout","task":"find the flaky test"}`, "scout-answer-7731", "The scout found it."))
	tn := newTurn(t, "Find the flaky test.")
	tn.Agent.Tools = tools
	tn.Delegate = &engine.Delegation{Agents: []string{"scout", "tester"}, Socket: fake.Socket(),
		Token: "tok-claude-0123456789", Server: []string{flow, "mcp-delegate"}}
	res, err := d.Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed || res.Output != "The scout found it." {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	calls := fake.Calls()
	if len(calls) != 1 || calls[0] != (engine.DelegateRequest{Token: "tok-claude-0123456789", Agent: "scout", Task: "find the flaky test"}) {
		t.Fatalf("calls = %+v", calls)
	}
	var gen []modelserver.Request
	for _, r := range s.Requests() {
		if r.Path == "/v1/messages" {
			gen = append(gen, r)
		}
	}
	if len(gen) < 2 {
		t.Fatalf("%d generation requests, want the call and the answer", len(gen))
	}
	if name := delegatetest.ToolName(gen[0]); name != delegateTool {
		t.Errorf("the tool is offered as %q, want %q", name, delegateTool)
	}
	if last := string(gen[len(gen)-1].Body); !strings.Contains(last, "scout-answer-7731: the flake is in TestRace") {
		t.Errorf("the tool's result did not reach the model: %.800s", last)
	}
	// The token is in a file of the turn's scratch directory only.
	clitest.NoKey(t, tn.Home, "tok-claude-0123456789")
	if *res.Usage.Turns != 2 {
		t.Errorf("turns = %d, want 2", *res.Usage.Turns)
	}
}
