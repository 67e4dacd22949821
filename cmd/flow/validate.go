package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/runner"
	"github.com/flowrun/flow/schema"
)

func (a *app) validateCmd() *cobra.Command {
	var pre bool
	var onTemporal string
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check flow files whole, reporting every fault at once; run nothing",
		Long: "Check flow files whole, reporting every fault at once as file:line:col: code: message;\n" +
			"run nothing. With --preflight, also check every driver the flows' agents use, as\n" +
			"flow run does before its first node: the CLI found and its version read, the\n" +
			"server reachable, the key variable set.",
		Example: "  flow validate examples/*.yaml\n  flow validate --preflight --project-agents examples/review.yaml",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			bad := false
			for _, f := range files {
				plan, diags := flows.Load(f, a.loadOptions())
				a.printDiagnostics(diags)
				if diags.HasErrors() {
					bad = true
					continue
				}
				if pre {
					checks, err := a.preflight(cmd.Context(), plan)
					for _, c := range checks {
						if c.Err == nil {
							fmt.Fprintln(a.stdout, safeText(c.Line()))
						}
					}
					if err != nil {
						for _, c := range checks {
							if c.Err != nil {
								fmt.Fprintln(a.stderr, safeText(c.Line()))
							}
						}
						bad = true
						continue
					}
				}
				if onTemporal != "" {
					// What flow run --temporal refuses before anything of
					// the run is made; the server is not asked.
					wd, _ := os.Getwd()
					if err := runner.CheckTemporal(cmd.Context(), plan, wd); err != nil {
						fmt.Fprintln(a.stderr, safeText(err.Error()))
						bad = true
						continue
					}
				}
				fmt.Fprintf(a.stdout, "%s: ok\n", f)
			}
			if bad {
				return &exitError{code: exitInvalid}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&pre, "preflight", false, "also check the drivers the agents use (CLI, version, server, key), as flow run does")
	cmd.Flags().StringVar(&onTemporal, "temporal", "", "also check what a run on the Temporal server HOST:PORT needs, as flow run --temporal does: a remote the workers reach for every repository a scope isolates in (the server is not contacted)")
	return cmd
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
