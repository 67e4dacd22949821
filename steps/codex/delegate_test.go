package codex

import (
	"context"
	"slices"
	"strings"
	"testing"

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
