package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

func newConfigCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Inspect the configuration"}
	cmd.AddCommand(&cobra.Command{
		Use:   "check",
		Short: "Validate the config file and print every problem (exit 1 if any)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, src, err := o.loadConfig()
			if err != nil {
				return err
			}
			problems := cfg.Check(o.getenv)
			out := cmd.OutOrStdout()
			for _, p := range problems {
				if _, err := fmt.Fprintln(out, p.String()); err != nil {
					return fmt.Errorf("config check: write: %w", err)
				}
			}
			if len(problems) > 0 {
				return &exitError{code: 1, msg: fmt.Sprintf("config check: %d problem(s) in %s", len(problems), configLabel(src.Path))}
			}
			_, err = fmt.Fprintf(out, "config ok (%s)\n", configLabel(src.Path))
			return err
		},
	})
	return cmd
}
