package delegate

import (
	"errors"

	"github.com/flowrun/flow/engine"
)

// MCPName is the name a CLI driver gives the MCP server in the CLI's
// configuration; the CLIs name the tool after it (Claude Code's
// mcp__flow__delegate).
const MCPName = "flow"

// Launch is how a CLI starts the delegate MCP server: the program, its
// arguments and the environment it adds.
type Launch struct {
	Command string
	Args    []string
	Env     map[string]string
}

// MCPLaunch returns the command a CLI driver writes into the CLI's MCP
// configuration for d: d.Server with one --agent flag per agent appended
// (package mcpserver), and the socket and token in the environment.
func MCPLaunch(d *engine.Delegation) (Launch, error) {
	if len(d.Server) == 0 {
		return Launch{}, errors.New("the turn may delegate but its delegation names no MCP server to start (Delegation.Server)")
	}
	args := append([]string(nil), d.Server[1:]...)
	for _, a := range d.Agents {
		args = append(args, "--agent", a)
	}
	return Launch{Command: d.Server[0], Args: args, Env: map[string]string{
		EnvSocket: d.Socket,
		EnvToken:  d.Token,
	}}, nil
}
