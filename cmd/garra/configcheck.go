package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/hands"
	"github.com/garraia/garra/internal/tools"
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
			conf, confProblems := confinementInForce(cfg, src.Path)
			problems := append(append(cfg.Check(o.getenv), apiServerProblems(cfg, o.getenv)...), confProblems...)
			errs, warns, err := printProblems(cmd.OutOrStdout(), problems)
			if err != nil {
				return err
			}
			if errs > 0 {
				also := ""
				if warns > 0 {
					also = fmt.Sprintf(" and %d warning(s)", warns)
				}
				return &exitError{code: 1, msg: fmt.Sprintf("config check: %d problem(s)%s in %s; %s", errs, also, configLabel(src.Path), conf)}
			}
			if warns > 0 {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "config ok with %d warning(s) (%s); %s\n", warns, configLabel(src.Path), conf)
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "config ok (%s); %s\n", configLabel(src.Path), conf)
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

// confinementInForce names where bash runs under cfg on this host and, for
// host bash, the kernel confinement in force (the gateway's when the config
// has local workspaces, else the laptop's), with a warning where bash
// would be refused or run unconfined.
func confinementInForce(cfg *config.Config, configPath string) (string, []config.Problem) {
	exposure := hands.Exposure(cfg, nil)
	if exposure.Where != tools.BashHost {
		return "bash: " + exposure.Where.String() + " (Landlock applies to host bash only)", nil
	}
	role := hands.RoleLaptop
	if cfg.LocalWorkspaces() > 0 {
		role = hands.RoleGateway
	}
	conf := hands.NewConfinement(cfg, hands.ConfineOptions{Role: role, ConfigPath: configPath})
	var ps []config.Problem
	switch {
	case conf.Warning() != "":
		ps = append(ps, config.Problem{Field: "agent.confinement", Message: conf.Warning(), Warning: true})
	case conf.Refuses():
		ps = append(ps, config.Problem{Field: "agent.confinement", Message: hands.ErrUnconfined.Error(), Warning: true})
	}
	return "host bash confinement: " + conf.String(), ps
}
