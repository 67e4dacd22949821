package codex

import (
	"slices"
	"strings"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/delegate"
)

// mcpArguments returns the -c overrides that make Codex start flow's
// delegate MCP server (package mcpserver) for d, and the environment
// entries Codex itself must get. The socket and the token travel in the
// environment and Codex hands them on (env_vars), so neither is on a
// command line, nor in the transcript's record of it. Approval mode
// "approve" runs the tool without asking: approval_policy is "never",
// and a call that needed a person would be refused.
func mcpArguments(d *engine.Delegation) (args, env []string, err error) {
	l, err := delegate.MCPLaunch(d)
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(l.Env))
	for name, value := range l.Env {
		names = append(names, name)
		env = append(env, name+"="+value)
	}
	slices.Sort(names)
	slices.Sort(env)
	key := "mcp_servers." + delegate.MCPName + "."
	return []string{
		"-c", key + "command=" + tomlString(l.Command),
		"-c", key + "args=" + tomlArray(l.Args),
		"-c", key + "env_vars=" + tomlArray(names),
		"-c", key + `default_tools_approval_mode="approve"`,
		// The turn must not start without the tool: Codex waits for the
		// server (a flow process, slow to start on a busy machine) and
		// fails if it never comes, rather than sending its first request
		// without the tool.
		"-c", key + "required=true",
		"-c", key + "startup_timeout_sec=60",
	}, env, nil
}

// tomlArray writes ss as a TOML array of strings.
func tomlArray(ss []string) string {
	q := make([]string, len(ss))
	for i, s := range ss {
		q[i] = tomlString(s)
	}
	return "[" + strings.Join(q, ",") + "]"
}
