package main

import (
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/flowrun/flow/flows"
)

func (a *app) agentsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "agents [FILE]",
		Short: "List the agent catalogue: name, scope, driver, model",
		Long: "List the agents flow can find: the user's directories, and with FILE the\n" +
			"directories and inline agents that flow lists; the project's own agents\n" +
			"only with --project-agents.",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var list []*flows.Agent
			if len(args) == 1 {
				plan, err := a.load(args[0])
				if err != nil {
					return err
				}
				list = plan.Catalogue.Agents()
			} else {
				list = flows.NewCatalogue(a.loadOptions(), nil).Agents()
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tSCOPE\tDRIVER\tMODEL\tDESCRIPTION")
			for _, ag := range list {
				model := ag.Model
				if model == "" {
					model = "-"
				}
				// An agent file may be the repository's: what it says is shown escaped.
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", safeText(ag.Name), ag.Scope, safeText(ag.Driver), safeText(model), safeText(ag.Description))
			}
			return tw.Flush()
		},
	}
}
