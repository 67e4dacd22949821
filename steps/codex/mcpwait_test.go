package codex

import (
	"context"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/clitest"
	"github.com/flowrun/flow/internal/delegatetest"
	"github.com/flowrun/flow/internal/modelserver"
)

// TestCodexWaitsForASlowDelegateServer: flow's delegate server takes 12 s
// to start, longer than Codex's default MCP start-up timeout (10 s), as a
// flow process can on a very busy machine. Codex waits for it, and its
// first request offers the tool.
func TestCodexWaitsForASlowDelegateServer(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 12 s for a server")
	}
	bin := clitest.Binary(t, "codex")
	flow := delegatetest.FlowBinary(t)
	fake := delegatetest.Start(t, delegatetest.Answer)
	s := modelserver.Start(t)
	s.Handle(delegatetest.Script("Both children answered.", delegatetest.TwoCalls...))
	tn := turn(t, s)
	tn.Delegate = &engine.Delegation{Agents: []string{"scout", "tester"}, Socket: fake.Socket(), Token: "tok-codex-slow-0123456789",
		Server: []string{"sh", "-c", `sleep 12; exec "$0" "$@"`, flow, "mcp-delegate"}}
	res, err := New(Options{Binary: bin}).Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed || res.Output != "Both children answered." {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	for _, r := range s.Requests() {
		if r.Path == "/v1/responses" {
			if name := delegatetest.ToolName(r); name != "mcp__flow__delegate" {
				t.Errorf("the first request offers %q: Codex did not wait for the server", name)
			}
			break
		}
	}
}
