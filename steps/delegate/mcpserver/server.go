// Package mcpserver is the stdio MCP server through which Claude Code and
// Codex offer an agent the delegate tool (docs/drivers.md, Delegation).
// The CLI starts it as `flow mcp-delegate --agent NAME...` (one --agent
// per agent the turn may start, the order kept), with the run's socket and
// the turn's token in FLOW_DELEGATE_SOCKET and FLOW_DELEGATE_TOKEN
// (delegate.EnvSocket, delegate.EnvToken); so a host sets
// engine.Delegation.Server to [flow-binary, "mcp-delegate"] and the driver
// appends the --agent flags and writes the environment into the CLI's
// configuration.
//
// The server offers one tool, delegate(agent, task), and forwards each
// call to the socket with delegate.Call: the child's answer is the tool's
// text result, a refusal or a failed child an isError result the model
// reads. It holds no state: every call is one connection to the socket,
// and the host decides it.
package mcpserver

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/flowrun/flow/steps/delegate"
)

// Config is what the server needs: where calls go and who may be started.
type Config struct {
	Socket, Token string
	Agents        []string
}

// New returns the MCP server offering the delegate tool for cfg.
func New(cfg Config, version string) (*mcp.Server, error) {
	if cfg.Socket == "" || cfg.Token == "" {
		return nil, fmt.Errorf("mcp-delegate: %s and %s must be set (the driver writes them into the CLI's configuration)",
			delegate.EnvSocket, delegate.EnvToken)
	}
	if len(cfg.Agents) == 0 {
		return nil, errors.New("mcp-delegate: no agent to delegate to: give at least one --agent")
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "flow", Version: version}, nil)
	s.AddTool(&mcp.Tool{
		Name:        delegate.Tool,
		Description: delegate.Description,
		InputSchema: delegate.Schema(cfg.Agents),
	}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		text, isErr := delegate.Serve(ctx, cfg.Socket, cfg.Token, req.Params.Arguments)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isErr}, nil
	})
	return s, nil
}

// Run serves cfg over stdin and stdout until the client closes stdin or
// ctx ends.
func Run(ctx context.Context, cfg Config, version string) error {
	s, err := New(cfg, version)
	if err != nil {
		return err
	}
	return s.Run(ctx, stdio())
}
