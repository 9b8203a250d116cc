package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/hands"
	"github.com/garraia/garra/internal/tools"
)

// Exit codes of `garra config check`: the verdict the gateway gives the
// same file.
const (
	checkExitRefused  = 1 // the gateway refuses it
	checkExitDisabled = 3 // the gateway runs it with parts turned off
)

func newConfigCommand(o *rootOptions) *cobra.Command {
	cmd := &cobra.Command{Use: "config", Short: "Inspect the configuration"}
	cmd.AddCommand(&cobra.Command{
		Use:   "check",
		Short: "Validate the config file and print every problem, with the gateway's verdict as the exit code",
		Long: `Validate the config file and print every problem, one per line, named by
its key, with the severity the gateway gives it (the gateway logs the same
problems with the same words when it starts or reloads the file):

  field: message            an error: the gateway refuses the config (it does
                            not start with it; a reload keeps the last good one)
  disabled: field: message  the gateway runs the config with the part the
                            message names turned off (it fails closed)
  warning: field: message   the config works as written; a risk

The exit code is the verdict: 1 when there is an error, 3 when something is
disabled and nothing is an error, 0 otherwise.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, src, err := o.loadConfig()
			if err != nil {
				return err
			}
			conf, confProblems := confinementInForce(cfg, src.Path)
			problems := append(append(cfg.Check(o.getenv), apiServerProblems(cfg, o.getenv)...), confProblems...)
			n, err := printProblems(cmd.OutOrStdout(), problems)
			if err != nil {
				return err
			}
			where := configLabel(src.Path)
			switch {
			case n[config.SeverityError] > 0:
				return &exitError{code: checkExitRefused, msg: fmt.Sprintf("config check: %s in %s: the gateway refuses this config; %s", n, where, conf)}
			case n[config.SeverityDisabled] > 0:
				return &exitError{code: checkExitDisabled, msg: fmt.Sprintf("config check: %s in %s: the gateway runs this config with those parts turned off; %s", n, where, conf)}
			case n[config.SeverityWarning] > 0:
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "config ok with %d warning(s) (%s); %s\n", n[config.SeverityWarning], where, conf)
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "config ok (%s); %s\n", where, conf)
			return err
		},
	})
	return cmd
}

// problemCounts counts problems by severity.
type problemCounts map[string]int

func (n problemCounts) String() string {
	s := fmt.Sprintf("%d error(s)", n[config.SeverityError])
	if d := n[config.SeverityDisabled]; d > 0 {
		s += fmt.Sprintf(", %d disabled", d)
	}
	if w := n[config.SeverityWarning]; w > 0 {
		s += fmt.Sprintf(", %d warning(s)", w)
	}
	return s
}

// printProblems writes one line per problem, marked by severity (an error
// unmarked), and counts them.
func printProblems(out io.Writer, problems []config.Problem) (problemCounts, error) {
	n := problemCounts{}
	for _, p := range problems {
		sev := p.Severity()
		n[sev]++
		line := p.String()
		if sev != config.SeverityError {
			line = sev + ": " + line
		}
		if _, err := fmt.Fprintln(out, line); err != nil {
			return n, fmt.Errorf("config check: write: %w", err)
		}
	}
	return n, nil
}

// gatewayVerdict logs the config's problems at start as a reload does, with
// the severities config check prints, and refuses a config with an error.
func gatewayVerdict(log *slog.Logger, cfg *config.Config, getenv func(string) string, where string) error {
	problems := cfg.Check(getenv)
	for _, p := range problems {
		switch p.Severity() {
		case config.SeverityError:
			log.Error("config problem", "severity", config.SeverityError, "problem", p.String())
		case config.SeverityDisabled:
			log.Warn("config problem: part disabled", "severity", config.SeverityDisabled, "problem", p.String())
		default:
			log.Warn("config problem", "severity", config.SeverityWarning, "problem", p.String())
		}
	}
	if config.Refused(problems) {
		return &exitError{code: 1, msg: "gateway: " + where + " has errors (logged above); `garra config check` lists them"}
	}
	return nil
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
