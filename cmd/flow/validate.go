package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/schema"
)

func (a *app) validateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check flow files whole, reporting every fault at once; run nothing",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			bad := false
			for _, f := range files {
				_, diags := flows.Load(f, a.loadOptions())
				a.printDiagnostics(diags)
				if diags.HasErrors() {
					bad = true
					continue
				}
				fmt.Fprintf(a.stdout, "%s: ok\n", f)
			}
			if bad {
				return &exitError{code: exitInvalid}
			}
			return nil
		},
	}
}

func (a *app) printDiagnostics(diags schema.Diagnostics) {
	for _, d := range diags.Sorted() {
		fmt.Fprintln(a.stderr, safeText(d.String()))
	}
}

// load loads a flow for a command that goes on to use it; problems are
// printed and end the command with exit code 2.
func (a *app) load(file string) (*flows.Plan, error) {
	plan, diags := flows.Load(file, a.loadOptions())
	a.printDiagnostics(diags)
	if diags.HasErrors() {
		return nil, &exitError{code: exitInvalid, msg: fmt.Sprintf("%s: %d problem(s); nothing ran", file, countErrors(diags))}
	}
	// The agents' keys are secrets from now on.
	for _, ag := range plan.Agents {
		if ag.APIKeyEnv != "" {
			a.learn(secret.Named{Name: ag.APIKeyEnv, Value: os.Getenv(ag.APIKeyEnv)})
		}
	}
	return plan, nil
}

func countErrors(ds schema.Diagnostics) int {
	n := 0
	for _, d := range ds.Sorted() {
		if d.Severity == schema.Error {
			n++
		}
	}
	return n
}
