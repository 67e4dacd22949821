package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/delegate"
)

// delegateCmd is `flow delegate AGENT TASK`: an exec agent's way to
// delegate (docs/delegation.md). It carries one call to the run's
// delegation socket, which its turn's environment names, and prints the
// child's answer; an error reply exits 1 with the reason on stderr.
func (a *app) delegateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delegate AGENT TASK",
		Short: "From an exec agent's turn, start a child agent on TASK and print its answer",
		Long: "From inside an exec agent's turn whose node declares delegate:, start a child\n" +
			"agent on TASK as a visit of the run and print its answer (docs/delegation.md).\n" +
			"A refused call (a limit, the budget) or a failed child exits 1, saying why.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			socket, token := os.Getenv(engine.EnvDelegateSocket), os.Getenv(engine.EnvDelegateToken)
			if socket == "" || token == "" {
				return &exitError{code: exitFailed, msg: fmt.Sprintf("flow delegate: this is not a turn that may delegate (%s is not set): run it from an exec agent whose node declares delegate:", engine.EnvDelegateSocket)}
			}
			reply, err := delegate.Call(cmd.Context(), socket, token, args[0], args[1])
			if err != nil {
				return &exitError{code: exitFailed, msg: "flow " + err.Error()}
			}
			if reply.Error != "" {
				return &exitError{code: exitFailed, msg: "flow delegate: " + reply.Error}
			}
			fmt.Fprintln(a.stdout, reply.Answer)
			return nil
		},
	}
}
