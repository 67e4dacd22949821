package main

import (
	"github.com/flowrun/flow/steps/delegate"
	"os"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/steps/delegate/mcpserver"
)

// mcpDelegateCmd is the stdio MCP server that Claude Code and Codex start
// for a turn that may delegate (docs/drivers.md, Delegation). It is
// hidden: flow's drivers write it into the CLI's configuration, no one
// types it.
func (a *app) mcpDelegateCmd() *cobra.Command {
	var agents []string
	cmd := &cobra.Command{
		Use:    "mcp-delegate --agent NAME...",
		Short:  "Serve the delegate tool to an agent CLI over MCP (started by the CLI)",
		Hidden: true,
		Args:   cobra.NoArgs,
		// It reads no configuration: everything comes from its flags and
		// the environment the driver wrote.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(cmd *cobra.Command, _ []string) error {
			return mcpserver.Run(cmd.Context(), mcpserver.Config{
				Socket: os.Getenv(delegate.EnvSocket), Token: os.Getenv(delegate.EnvToken), Agents: agents,
			}, version())
		},
	}
	cmd.Flags().StringArrayVar(&agents, "agent", nil, "an agent the turn may delegate to (repeated)")
	return cmd
}
