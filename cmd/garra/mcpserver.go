package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/mcpserver"
	"github.com/garraia/garra/internal/mcpstdio"
	"github.com/garraia/garra/internal/mcptrace"
	"github.com/garraia/garra/internal/redact"
)

func newMCPServerCommand(o *rootOptions) *cobra.Command {
	return &cobra.Command{
		Use:   "mcp-server",
		Short: "Serve MCP over stdio (for Claude Desktop, Claude Code and other MCP hosts)",
		Long: `Serve the Model Context Protocol over stdin/stdout.

stdout carries JSON-RPC only; logs go to stderr, redacted.

Tools: garra_ask (one question to an LLM provider), and garra_agent when
GARRAIA_MCP_ENABLE_TOOLS is 1, true or yes. Resource: garra://policy (the
limits in force). Prompts: onboard_orchestrator, and delegate_task with
garra_agent.

Every call, resource read and refusal is appended to the audit file
(audit.path, default <data_dir>/audit.jsonl) as one JSON line, without
prompts, answers or ids in clear.

Operator limits, read once at start:
  GARRAIA_MCP_MODEL_ALLOWLIST   comma-separated models a call may use
  GARRAIA_MCP_MAX_TIMEOUT_SECS  cap on timeout_secs
  GARRAIA_MCP_ENABLE_TOOLS      expose garra_agent
  GARRAIA_MCP_ALLOWED_DIRS      roots for garra_agent's file tools`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stderr := cmd.ErrOrStderr()
			cfg, src, err := o.loadConfig()
			if err != nil {
				return err
			}
			red, badPatterns := processRedactor(cfg, o.getenv)
			log := newLogger(stderr, red)
			for _, e := range badPatterns {
				log.Warn("redact pattern ignored", "error", e)
			}
			policy, err := mcppolicy.StdioFromEnv(o.getenv)
			if err != nil {
				return fmt.Errorf("mcp-server: %w", err)
			}
			// Unset OTEL_* variables cost a few lookups here and nothing after.
			tp, flushTraces, err := startTracing(cmd.Context(), o, log, "garra-mcp-server", func() *redact.Redactor { return red })
			if err != nil {
				return err
			}
			defer flushTraces()
			core := &ask.Core{Config: cfg, Redactor: red, Getenv: o.getenv, Retries: ask.DefaultRetries, TracerProvider: tp}
			auditLog := newAuditLog(cfg, log)
			defer closeLogged(log, "audit log", auditLog)
			opts := mcpserver.Options{Caller: mcppolicy.LocalUser(), Version: version, Ask: core, Logger: log, Audit: auditLog,
				Limits: mcppolicy.Limits{Stdio: policy, DefaultProvider: cfg.LLM.Provider, DefaultModel: cfg.LLM.Model}}
			if tp != nil {
				opts.Middleware = []mcp.Middleware{mcptrace.ServerMiddleware(tp, mcptrace.TransportPipe)}
			}
			if policy.EnableTools {
				la := newLocalAgent(cfg, src.Path, core, red, o.getenv, log)
				opts.Agent, opts.FileRoots = la, len(la.Jail.Roots())
			}
			server := mcpserver.New(opts)
			log.Info("garra mcp-server starting", "config", configLabel(src.Path), "policy", policy.String(),
				"provider", cfg.LLM.Provider, "audit", auditLog.Path(), "pid", os.Getpid())
			return server.Run(cmd.Context(), &mcpstdio.Transport{In: cmd.InOrStdin(), Out: cmd.OutOrStdout()})
		},
	}
}

func configLabel(path string) string {
	if path == "" {
		return "built-in defaults"
	}
	return path
}

// newAuditLog opens the audit file of the `audit:` section. It cannot fail:
// a file that cannot be written is reported once on stderr and the server
// keeps serving without it.
func newAuditLog(cfg *config.Config, log *slog.Logger) *audit.Log {
	return audit.New(audit.Options{Path: cfg.AuditPath(), MaxBytes: cfg.Audit.MaxBytes, MaxFiles: cfg.Audit.MaxFiles, Logger: log})
}
