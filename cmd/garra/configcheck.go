package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/garraia/garra/internal/config"
)

func newConfigCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Inspect the configuration"}
	cmd.AddCommand(&cobra.Command{
		Use:   "check",
		Short: "Validate the config file and print every problem (exit 1 if any, warnings aside)",
		Long: `Validate the config file and print every problem, one per line, named by
its key. A problem is an error (a feature is broken as configured) unless it
is printed with "warning:" (a risk, such as a default model that routes to
costlier models). The exit code is 1 when there is at least one error, 0
otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, src, err := o.loadConfig()
			if err != nil {
				return err
			}
			problems := append(cfg.Check(o.getenv), apiServerProblems(cfg, o.getenv)...)
			errs, warns, err := printProblems(cmd.OutOrStdout(), problems)
			if err != nil {
				return err
			}
			if errs > 0 {
				also := ""
				if warns > 0 {
					also = fmt.Sprintf(" and %d warning(s)", warns)
				}
				return &exitError{code: 1, msg: fmt.Sprintf("config check: %d problem(s)%s in %s", errs, also, configLabel(src.Path))}
			}
			if warns > 0 {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "config ok with %d warning(s) (%s)\n", warns, configLabel(src.Path))
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "config ok (%s)\n", configLabel(src.Path))
			return err
		},
	})
	return cmd
}

// printProblems writes one line per problem, warnings marked, and counts
// errors and warnings.
func printProblems(out io.Writer, problems []config.Problem) (errs, warns int, err error) {
	for _, p := range problems {
		line := p.String()
		if p.Warning {
			line = "warning: " + line
			warns++
		} else {
			errs++
		}
		if _, err := fmt.Fprintln(out, line); err != nil {
			return errs, warns, fmt.Errorf("config check: write: %w", err)
		}
	}
	return errs, warns, nil
}
