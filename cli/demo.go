package main

import (
	"github.com/eddyops/eddy/cli/internal/demo"
	"github.com/spf13/cobra"
)

func newDemoCommand() *cobra.Command {
	return &cobra.Command{
		Use:    "demo",
		Short:  "A scripted tour of Eddy on the example repository (what `make demo` runs)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return demo.Run(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
}
