package main

import (
	"github.com/spf13/cobra"

	"github.com/flowrun/flow/schema"
)

func (a *app) schemaCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of flow files, for editors",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := a.stdout.Write(schema.JSONSchema())
			return err
		},
	}
}
