package claude

import (
	"context"
	"slices"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/delegatetest"
)

// A turn that may delegate makes Claude Code wait for flow's delegate
// server before its first request: by default, in -p mode, it does not,
// and on a busy machine the first request went out without the tool (the
// lead answered "no delegate tool was offered"). A turn that may not
// delegate starts no server and waits for none; a user's own setting of
// the variables is replaced for the delegating turn only.
func TestADelegatingTurnWaitsForItsServer(t *testing.T) {
	t.Setenv("MCP_CONNECTION_NONBLOCKING", "1")
	d := New(Options{})
	for _, c := range []struct {
		name     string
		delegate *engine.Delegation
		want     []string
	}{
		{"delegates", &engine.Delegation{Server: []string{"flow", "delegate", "mcp"}, Agents: []string{"scout"}},
			[]string{"MCP_CONNECTION_NONBLOCKING=0", "MCP_CONNECT_TIMEOUT_MS=60000"}},
		{"does not", nil, []string{"MCP_CONNECTION_NONBLOCKING=1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			turn := &engine.Turn{Agent: &flows.Agent{Name: "lead"}, Delegate: c.delegate}
			_, env, err := d.setup(turn, t.TempDir(), "")
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !slices.Contains(env, w) {
					t.Errorf("Claude Code's environment lacks %s", w)
				}
			}
			if c.delegate != nil && slices.Contains(env, "MCP_CONNECTION_NONBLOCKING=1") {
				t.Error("the user's MCP_CONNECTION_NONBLOCKING=1 is still in a delegating turn's environment")
			}
		})
	}
}

// TestE2EASlowDelegateServerIsWaitedFor: flow's delegate server takes two
// seconds to start, as a flow process can on a busy machine. Real Claude
// Code waits for it, so its first request already offers the tool and the
// turn delegates; without the wait, the first request went out without
// the tool and the model could only answer that none was offered.
func TestE2EASlowDelegateServerIsWaitedFor(t *testing.T) {
	t.Parallel()
	flow := delegatetest.FlowBinary(t)
	fake := delegatetest.Start(t, delegatetest.Answer)
	d, s := e2e(t)
	s.Handle(delegatetest.Script("Both children answered.", delegatetest.TwoCalls...))
	tn := newTurn(t, "Find the flaky test.")
	const token = "tok-claude-slow-0123456789"
	tn.Delegate = &engine.Delegation{Agents: []string{"scout", "tester"}, Socket: fake.Socket(), Token: token,
		Server: []string{"sh", "-c", `sleep 2; exec "$0" "$@"`, flow, "mcp-delegate"}}
	res, err := d.Turn(context.Background(), tn)
	if err != nil || res.Status != engine.Completed || res.Output != "Both children answered." {
		t.Fatalf("Turn = %+v, %v", res, err)
	}
	for _, r := range s.Requests() {
		if r.Path == "/v1/messages" {
			if name := delegatetest.ToolName(r); name != delegateTool {
				t.Errorf("the first request offers %q, want %q: Claude Code did not wait for the server", name, delegateTool)
			}
			break
		}
	}
}
