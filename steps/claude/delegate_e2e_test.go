package claude

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/delegatetest"
	"github.com/flowrun/flow/internal/modelserver"
)

// TestE2EDelegate runs a turn whose model delegates to two children, one
// after the other, through the delegate tool, which Claude Code reaches
// through the real `flow mcp-delegate`: with the read-only tools, and
// with no tool of Claude Code's own at all.
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
	fake := delegatetest.Start(t, delegatetest.Answer)
	d, s := e2e(t)
	s.Handle(delegatetest.Script("Both children answered.", delegatetest.TwoCalls...))
	tn := newTurn(t, "Find the flaky test.")
	tn.Agent.Tools = tools
	const token = "tok-claude-0123456789"
	tn.Delegate = &engine.Delegation{Agents: []string{"scout", "tester"}, Socket: fake.Socket(),
		Token: token, Server: []string{flow, "mcp-delegate"}}
	var progress clitest.Progress
	tn.Progress = progress.Record
	res, err := d.Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed || res.Output != "Both children answered." {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	if calls := fake.Calls(); !slices.Equal(calls, delegatetest.TwoCallsMade(token)) {
		t.Fatalf("calls = %+v", calls)
	}
	var gen []modelserver.Request
	for _, r := range s.Requests() {
		if r.Path == "/v1/messages" {
			gen = append(gen, r)
		}
	}
	if len(gen) < 3 {
		t.Fatalf("%d generation requests, want two calls and the answer", len(gen))
	}
	if name := delegatetest.ToolName(gen[0]); name != delegateTool {
		t.Errorf("the tool is offered as %q, want %q", name, delegateTool)
	}
	last := string(gen[len(gen)-1].Body)
	for _, want := range []string{"scout did: find the flaky test; done-scout-4242", "tester did: run it a hundred times; done-tester-4242"} {
		if !strings.Contains(last, want) {
			t.Errorf("the tool's result %q did not reach the model", want)
		}
	}
	if !progress.Has("using " + delegateTool) {
		t.Errorf("progress = %s, want using %s", &progress, delegateTool)
	}
	// The token is in a file of the turn's scratch directory only.
	clitest.NoKey(t, tn.Home, token)
	if *res.Usage.Turns != 3 {
		t.Errorf("turns = %d, want 3", *res.Usage.Turns)
	}
}

// TestE2EDelegateCancel cancels a turn while its delegate call waits for
// the child: Claude Code, and the MCP server it started, end with it.
func TestE2EDelegateCancel(t *testing.T) {
	t.Parallel()
	flow := delegatetest.FlowBinary(t)
	const marker = "scout-cancel-8137" // an agent name: on the MCP server's command line
	inCall, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fake := delegatetest.Start(t, func(engine.DelegateRequest) engine.DelegateReply {
		once.Do(func() { close(inCall) })
		<-release
		return engine.DelegateReply{Answer: "too late"}
	})
	defer close(release)
	d, s := e2e(t)
	s.Handle(delegatetest.Model(`{"agent":"`+marker+`","task":"wait"}`, "too late", "never reached"))
	tn := newTurn(t, "Wait for the scout.")
	tn.Delegate = &engine.Delegation{Agents: []string{marker}, Socket: fake.Socket(), Token: "tok-claude-cancel-0123",
		Server: []string{flow, "mcp-delegate"}}
	delegatetest.CancelMidCall(t, inCall, marker, func(ctx context.Context) (*engine.TurnResult, error) { return d.Turn(ctx, tn) })
	clitest.NoneLeft(t, tn.RunID)
}
