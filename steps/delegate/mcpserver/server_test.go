package mcpserver

import (
	"context"
	"github.com/flowrun/flow/steps/delegate"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/internal/delegatetest"
)

// session connects a client to a server for cfg in memory.
func session(t *testing.T, cfg Config) *mcp.ClientSession {
	t.Helper()
	s, err := New(cfg, "test")
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, st) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done //nolint:errcheck // waits for the goroutine to end; its error is not this check
	})
	return cs
}

func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func TestMCPDelegateForwards(t *testing.T) {
	t.Parallel()
	fake := delegatetest.Start(t, func(r engine.DelegateRequest) engine.DelegateReply {
		if r.Agent == "tester" {
			return engine.DelegateReply{Error: "delegate: max_children 4 reached"}
		}
		return engine.DelegateReply{Answer: "scout says: " + r.Task}
	})
	cs := session(t, Config{Socket: fake.Socket(), Token: "tok-1", Agents: []string{"scout", "tester"}})
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "delegate" {
		t.Fatalf("tools = %+v, %v", tools, err)
	}
	schema, _ := tools.Tools[0].InputSchema.(map[string]any)
	agent, _ := schema["properties"].(map[string]any)["agent"].(map[string]any)
	if enum, _ := agent["enum"].([]any); len(enum) != 2 || enum[0] != "scout" || enum[1] != "tester" {
		t.Errorf("agent schema = %v, want the enum of agents", agent)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delegate", Arguments: map[string]any{"agent": "scout", "task": "find the flake"}})
	if err != nil || res.IsError || text(res) != "scout says: find the flake" {
		t.Fatalf("scout call = %+v (%q), %v", res, text(res), err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "delegate", Arguments: map[string]any{"agent": "tester", "task": "run it"}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "max_children 4") {
		t.Fatalf("refused call = %+v (%q), %v; want an error result", res, text(res), err)
	}
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "delegate", Arguments: map[string]any{"agent": "scout"}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "task") {
		t.Fatalf("call without a task = %+v (%q), %v; want an error result", res, text(res), err)
	}
	calls := fake.Calls()
	if len(calls) != 2 || calls[0] != (engine.DelegateRequest{Token: "tok-1", Agent: "scout", Task: "find the flake"}) {
		t.Errorf("calls = %+v", calls)
	}
}

func TestMCPDelegateNoSocket(t *testing.T) {
	t.Parallel()
	cs := session(t, Config{Socket: t.TempDir() + "/none.sock", Token: "t", Agents: []string{"scout"}})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delegate", Arguments: map[string]any{"agent": "scout", "task": "x"}})
	if err != nil || !res.IsError || !strings.Contains(text(res), "delegate:") {
		t.Fatalf("call = %+v (%q), %v; want an error result", res, text(res), err)
	}
}

func TestMCPDelegateConfig(t *testing.T) {
	t.Parallel()
	if _, err := New(Config{Agents: []string{"scout"}}, ""); err == nil || !strings.Contains(err.Error(), delegate.EnvSocket) {
		t.Errorf("New without a socket = %v, want an error naming %s", err, delegate.EnvSocket)
	}
	if _, err := New(Config{Socket: "s", Token: "t"}, ""); err == nil || !strings.Contains(err.Error(), "--agent") {
		t.Errorf("New without agents = %v", err)
	}
}
