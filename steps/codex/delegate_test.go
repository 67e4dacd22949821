package codex

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/delegatetest"
	"github.com/flowrun/flow/internal/modelserver"
)

// TestCodexDelegate runs a turn whose model delegates to two children, one
// after the other, through the delegate tool, which Codex reaches through
// the real `flow mcp-delegate`.
func TestCodexDelegate(t *testing.T) {
	bin := clitest.Binary(t, "codex")
	flow := delegatetest.FlowBinary(t)
	fake := delegatetest.Start(t, delegatetest.Answer)
	s := modelserver.Start(t)
	s.Handle(delegatetest.Script("Both children answered.", delegatetest.TwoCalls...))
	tn := turn(t, s)
	const token = "tok-codex-0123456789"
	tn.Delegate = &engine.Delegation{Agents: []string{"scout", "tester"}, Socket: fake.Socket(),
		Token: token, Server: []string{flow, "mcp-delegate"}}
	res, err := New(Options{Binary: bin}).Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed || res.Output != "Both children answered." {
		reqs := s.Requests()
		last := string(reqs[len(reqs)-1].Body)
		if i := strings.LastIndex(last, "function_call_output"); i >= 0 {
			last = last[i:min(len(last), i+600)]
		}
		t.Fatalf("Turn = %+v, %v\nthe last request's tool output: %.600s", res, err, last)
	}
	if calls := fake.Calls(); !slices.Equal(calls, delegatetest.TwoCallsMade(token)) {
		t.Fatalf("calls = %+v", calls)
	}
	var gen []modelserver.Request
	for _, r := range s.Requests() {
		if r.Path == "/v1/responses" {
			gen = append(gen, r)
		}
	}
	if len(gen) < 3 {
		t.Fatalf("%d generation requests, want two calls and the answer", len(gen))
	}
	if name := delegatetest.ToolName(gen[0]); name != "mcp__flow__delegate" {
		t.Errorf("Codex offers the tool as %q, want delegate in the namespace mcp__flow", name)
	}
	last := string(gen[len(gen)-1].Body)
	for _, want := range []string{"scout did: find the flaky test; done-scout-4242", "tester did: run it a hundred times; done-tester-4242"} {
		if !strings.Contains(last, want) {
			t.Errorf("the tool's result %q did not reach the model", want)
		}
	}
	// The token is handed on in the environment, never on a command line
	// the transcript records.
	clitest.NoKey(t, tn.Home, token)
}

// TestCodexDelegateCancel cancels a turn while its delegate call waits for
// the child: Codex, and the MCP server it started, end with it.
func TestCodexDelegateCancel(t *testing.T) {
	bin := clitest.Binary(t, "codex")
	flow := delegatetest.FlowBinary(t)
	const marker = "scout-cancel-6029" // an agent name: on the MCP server's command line
	inCall, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	fake := delegatetest.Start(t, func(engine.DelegateRequest) engine.DelegateReply {
		once.Do(func() { close(inCall) })
		<-release
		return engine.DelegateReply{Answer: "too late"}
	})
	defer close(release)
	s := modelserver.Start(t)
	s.Handle(delegatetest.Model(`{"agent":"`+marker+`","task":"wait"}`, "too late", "never reached"))
	tn := turn(t, s)
	tn.Delegate = &engine.Delegation{Agents: []string{marker}, Socket: fake.Socket(), Token: "tok-codex-cancel-0123",
		Server: []string{flow, "mcp-delegate"}}
	delegatetest.CancelMidCall(t, inCall, marker, func(ctx context.Context) (*engine.TurnResult, error) {
		return New(Options{Binary: bin, Grace: time.Second}).Turn(ctx, tn)
	})
	clitest.NoneLeft(t, tn.RunID)
}
