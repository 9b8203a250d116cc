package main

import (
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/redact"
)

type rootOptions struct {
	configPath string
	getenv     func(string) string
}

func newRootCommand(getenv func(string) string) *cobra.Command {
	o := &rootOptions{getenv: getenv}
	cmd := &cobra.Command{
		Use:           "garra",
		Short:         "Run MCP agents safely: a stdio MCP server, an HTTP gateway and a sandbox",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	cmd.PersistentFlags().StringVar(&o.configPath, "config", "", "config file (default $GARRAIA_CONFIG, else ~/.garraia/config.yml)")
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError("%v", err) })
	cmd.AddCommand(
		newMCPServerCommand(o),
		newAskCommand(o),
		newGatewayCommand(o),
		newSandboxCommand(o),
		newConfigCommand(o),
		newPairCommand(o),
		newVersionCommand(),
		newCopyBinaryCommand(),
	)
	return cmd
}

func (o *rootOptions) loadConfig() (*config.Config, config.Source, error) {
	return config.Load(o.configPath, o.getenv)
}

// newLogger logs text lines to w (stderr), every message and attribute
// passed through the redactor.
func newLogger(w io.Writer, r *redact.Redactor) *slog.Logger {
	return slog.New(redact.NewHandler(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}), r))
}

// closeLogged closes c on the way out of a command whose own result is
// already decided, so a failure to close is worth a warning, not an exit code.
func closeLogged(log *slog.Logger, what string, c io.Closer) {
	if err := c.Close(); err != nil {
		log.Warn("close "+what, "error", err)
	}
}
