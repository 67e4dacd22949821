package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/steps/delegate"
)

// delegateCmd is `flow delegate AGENT TASK`: an exec agent's way to
// delegate (docs/delegation.md). It carries one call to the run's
// delegation socket, which its turn's environment names, and prints the
// child's answer; an error reply exits 1 with the reason on stderr.
//
// Its arguments are never parsed as flags: a task is text an agent wrote,
// and `flow delegate scout -h` must send "-h", not print the help. So the
// command takes AGENT and TASK as two arguments, with an optional `--`
// before TASK (or before AGENT); `-h` or `--help` alone asks for the help.
func (a *app) delegateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "delegate AGENT [--] TASK",
		Short: "From an exec agent's turn, start a child agent on TASK and print its answer",
		Long: "From inside an exec agent's turn whose node declares delegate:, start a child\n" +
			"agent on TASK as a visit of the run and print its answer (docs/delegation.md).\n" +
			"A refused call (a limit, the budget) or a failed child exits 1, saying why.\n" +
			"TASK is one argument, taken as it is even when it starts with -; `--` may\n" +
			"stand before it. The command has no options: `-h` or `--help` alone shows this.",
		DisableFlagParsing:    true,
		DisableFlagsInUseLine: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && (args[0] == "-h" || args[0] == "--help") {
				return cmd.Help()
			}
			agent, task, err := delegateArgs(args)
			if err != nil {
				return &usageError{cmd: cmd, err: err}
			}
			socket, token := os.Getenv(delegate.EnvSocket), os.Getenv(delegate.EnvToken)
			if socket == "" || token == "" {
				return &exitError{code: exitFailed, msg: fmt.Sprintf("flow delegate: this is not a turn that may delegate (%s is not set): run it from an exec agent whose node declares delegate:", delegate.EnvSocket)}
			}
			reply, err := delegate.Call(cmd.Context(), socket, token, agent, task)
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

// delegateArgs reads `AGENT [--] TASK` (or `-- AGENT TASK`): nothing in
// it is an option.
func delegateArgs(args []string) (agent, task string, err error) {
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 3 && args[1] == "--" {
		args = []string{args[0], args[2]}
	}
	switch {
	case len(args) > 0 && strings.HasPrefix(args[0], "-"):
		return "", "", fmt.Errorf("delegate takes no options: %q stands where AGENT goes; write flow delegate AGENT TASK, with -- before a task that starts with -", args[0])
	case len(args) != 2:
		return "", "", fmt.Errorf("delegate takes AGENT and TASK, two arguments; got %d: quote the task as one argument (flow delegate scout \"look at A\")", len(args))
	}
	return args[0], args[1], nil
}
