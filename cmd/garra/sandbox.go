package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/redact"
	"github.com/garraia/garra/internal/sandbox"
	"github.com/garraia/garra/internal/toolchain"
)

func newSandboxCommand(o *rootOptions) *cobra.Command {
	var workspace, listen, tokenFile string
	var drainSeconds int
	var requiredTools []string
	cmd := &cobra.Command{
		Use:   "sandbox",
		Short: "Serve the agent's tools on one workspace over MCP HTTP (runs in an orchestrator's pod)",
		Long: `Serve bash, file_read, file_write, git_diff and web_fetch on one workspace
directory as an MCP server over Streamable HTTP (stateless, JSON responses).

This is the per-orchestrator tool runtime: it runs in the orchestrator's own
pod, which is the security boundary (no LLM key, only its own workspace
volume). bash runs on the pod, behind the shell gate. The gateway calls it.

Endpoints:
  POST /mcp     MCP; every request needs "Authorization: Bearer <token>"
  GET  /healthz 200 while the process serves
  GET  /readyz  200 while the workspace is present and a directory

Resources:
  garra://sandbox/toolchain  the programs on PATH with their versions (a
                             fixed list of well-known build tools, and
                             --required-tools), and the required ones that
                             are missing; JSON, rediscovered at most once a
                             minute, each version command cut after 2 s

Environment (exactly one):
  GARRA_SANDBOX_TOKEN       the bearer token (at least 16 characters)
  GARRA_SANDBOX_TOKEN_FILE  a file holding it (or --token-file)

Egress through the gateway (orchestrators with egress: gateway):
  GARRA_EGRESS_PROXY        the gateway's egress proxy, http://HOST:PORT
  GARRA_EGRESS_CA_FILE      PEM of the gateway's CA
With both set, every bash call gets HTTPS_PROXY/HTTP_PROXY (and the lower
case forms) pointing at the proxy with this sandbox's egress token (derived
from its token; never the token itself), NO_PROXY for loopback, and
SSL_CERT_FILE, GIT_SSL_CAINFO, CURL_CA_BUNDLE, REQUESTS_CA_BUNDLE naming a
bundle written at start (the image's roots + the gateway's CA) and
NODE_EXTRA_CA_CERTS the CA alone; web_fetch uses the proxy too. The
credentials the gateway injects never enter the pod.

A token file may hold several tokens, one per line, each accepted (the
overlap of a rotation). It is re-read when it changes (a mounted Secret's
update), so a rotated token works without a restart; a file that cannot
be read or has a bad line is not applied and the tokens loaded before
stay valid.

The process is non-dumpable: bash, running as the same user, can read
neither its environment nor its memory. Nothing a bash command starts
outlives the call.

Logs go to stderr, redacted; the first line names the bound address
(msg="garra sandbox listening" addr=HOST:PORT). SIGTERM or SIGINT stops
accepting and lets in-flight calls finish for up to --drain-seconds
(default 25), then cancels what is left, which kills its bash process
groups.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			token, file, err := sandboxToken(o.getenv, tokenFile, cmd.Flags().Changed("token-file"))
			if err != nil {
				return usageError("sandbox: %v", err)
			}
			if drainSeconds < 1 || drainSeconds > 900 {
				return usageError("sandbox: --drain-seconds: %d is outside [1, 900]", drainSeconds)
			}
			if err := toolchain.CheckRequired(requiredTools); err != nil {
				return usageError("sandbox: --required-tools: %v", err)
			}
			// The built-in rules plus the tokens themselves, by value, belt
			// and braces: nothing logs them.
			secrets := []string{token}
			if file != "" {
				secrets, _ = config.ReadSecretLines(file)
			}
			red := redact.Default().WithSecrets(secrets...)
			log := newLogger(cmd.ErrOrStderr(), red)
			tp, flushTraces, err := startTracing(cmd.Context(), o, log, "garra-sandbox", func() *redact.Redactor { return red })
			if err != nil {
				return err
			}
			defer flushTraces()
			srv, err := sandbox.New(sandbox.Options{
				TracerProvider:  tp,
				Workspace:       workspace,
				Token:           token,
				TokenFile:       file,
				Logger:          log,
				Version:         version,
				ShutdownTimeout: time.Duration(drainSeconds) * time.Second,
				RequiredTools:   requiredTools,
				EgressProxy:     o.getenv(sandbox.EgressProxyEnv),
				EgressCAFile:    o.getenv(sandbox.EgressCAFileEnv),
			})
			if err != nil {
				if errors.Is(err, sandbox.ErrNoToken) || errors.Is(err, sandbox.ErrWeakToken) || errors.Is(err, sandbox.ErrWorkspace) ||
					errors.Is(err, sandbox.ErrEgress) {
					return usageError("sandbox: %v", err)
				}
				return fmt.Errorf("sandbox: %w", err)
			}
			defer func() { _ = srv.Close() }()
			log.Info("garra sandbox starting", "version", version, "pid", os.Getpid())
			return srv.Run(cmd.Context(), listen)
		},
	}
	cmd.Flags().StringVar(&workspace, "workspace", "/workspace", "the workspace directory the tools work on (must exist; not a symlink)")
	cmd.Flags().StringVar(&listen, "listen", ":8080", "address to listen on (host:port; port 0 picks a free one)")
	cmd.Flags().IntVar(&drainSeconds, "drain-seconds", int(sandbox.DefaultShutdownTimeout/time.Second), "on SIGTERM, how long running calls may finish before they are cut")
	cmd.Flags().StringSliceVar(&requiredTools, "required-tools", nil, "programs the image must have on PATH (comma-separated names); "+toolchain.URI+" lists the missing ones")
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "file holding the bearer token (default $"+sandbox.TokenFileEnv+"; instead of $"+sandbox.TokenEnv+")")
	return cmd
}

// sandboxToken is the bearer token from $GARRA_SANDBOX_TOKEN, or the file
// --token-file (else $GARRA_SANDBOX_TOKEN_FILE) names, which the server
// reads (and re-reads) itself; both is an error, so that which one is
// live is never a question. Neither, with no error: sandbox.New refuses
// that.
func sandboxToken(getenv func(string) string, flagFile string, flagSet bool) (token, file string, err error) {
	file = flagFile
	if !flagSet {
		file = getenv(sandbox.TokenFileEnv)
	}
	token = getenv(sandbox.TokenEnv)
	if file != "" && token != "" {
		return "", "", fmt.Errorf("%s and a token file are both set: set only one", sandbox.TokenEnv)
	}
	return token, file, nil
}
