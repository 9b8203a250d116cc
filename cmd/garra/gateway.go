package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/garraia/garra/internal/chat/chatruntime"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/gateway"
	"github.com/garraia/garra/internal/kube"
	"github.com/garraia/garra/internal/pgbudget"
	"github.com/garraia/garra/internal/redact"
)

func newGatewayCommand(o *rootOptions) *cobra.Command {
	var watch policyWatchFlags
	cmd := &cobra.Command{
		Use:   "gateway",
		Short: "Serve the HTTP MCP gateway (POST /mcp, /healthz, /readyz, /metrics)",
		Long: `Serve the HTTP MCP gateway on gateway.listen.

POST /mcp exists only with gateway.mcp_http.enabled and a credential
(gateway.api_key_file, gateway.api_key or GARRAIA_GATEWAY_API_KEY).
Orchestrators authenticate with the tokens held in the files their key_file
names or the environment variables their key_env names; the tokens for their
sandboxes likewise (sandbox.token_file or sandbox.token_env). A token file
may hold several tokens, one per line: each authenticates (a rotation's
overlap); a sandbox is sent the first line. The config file and the token
files are watched: a change that passes ` + "`garra config check`" + ` is applied
live to new requests (calls in flight finish under the old policy); one
that does not is logged, reported on /readyz and not applied. Listen
address, data_dir, audit and the Telegram connection need a restart. On
SIGTERM the gateway drains: /readyz and new requests answer 503, calls in
flight get up to gateway.drain_seconds (default 30) to finish, then are cut
with their timeout kind. The process is non-dumpable, so no tool child can
read its environment.

With gateway.egress.listen set it also serves the egress proxy, the only
way out of sandboxes with egress: gateway: each sandbox is known by a token
derived from its own, reaches only its orchestrator's hosts, and gets its
orchestrator's credentials injected for their hosts (TLS terminated with
gateway.egress.ca_cert_file's CA, upstream TLS verified); the credentials
never reach the sandbox. Credential files are re-read like token files.

In a cluster, --watch-configmap and --watch-secret name the objects the
config file and the token files are mounted from (the operator sets them):
the gateway then also watches those two objects through the API server,
with its ServiceAccount (or gateway.auth.kubeconfig), and applies a change
as soon as the API server has it instead of when the kubelet rewrites the
files. The ConfigMap's key is the config file's name; a token file directly
in --watch-secret-dir is the Secret's key of its name. When the API server
cannot be reached the files are the source again.

Each caller sees only what its policy allows: tools, resources (garra://status,
garra://policy, garra://chats, garra://chats/{chat}) and prompts
(onboard_orchestrator, diagnose_gateway, delegate_task with garra_agent).
Every call, resource read and refusal is appended to the audit file
(audit.path, default <data_dir>/audit.jsonl) as one JSON line, without
tokens, prompts, answers or chat ids in clear. Error kinds: docs/errors.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, src, err := o.loadConfig()
			if err != nil {
				return err
			}
			// Read once more and build from these very bytes, so that the
			// hash /readyz reports is of the config in force.
			var cfgBytes []byte
			if src.Path != "" {
				if data, err := os.ReadFile(src.Path); err == nil {
					if again, err := config.FromBytes(data, o.getenv); err == nil {
						cfg, cfgBytes = again, data
					}
				}
			}
			red, _ := processRedactor(cfg, o.getenv)
			log := newLogger(cmd.ErrOrStderr(), red)
			auditLog := newAuditLog(cfg, log)
			defer closeLogged(log, "audit log", auditLog)
			log.Info("garra gateway starting", "version", version, "config", configLabel(src.Path), "audit", auditLog.Path(),
				"gogc", tuneGC(o.getenv))
			// Spans are redacted with the policy in force once the gateway
			// exists (a reload's secrets included), with red before.
			var built atomic.Pointer[gateway.Gateway]
			tp, flushTraces, err := startTracing(cmd.Context(), o, log, "garra-gateway", func() *redact.Redactor {
				if g := built.Load(); g != nil {
					return g.Redactor()
				}
				return red
			})
			if err != nil {
				return err
			}
			defer flushTraces()
			// Before ReadAPIKeyFile, as a reload does: Check reads the file itself.
			if err := gatewayVerdict(log, cfg, o.getenv, configLabel(src.Path)); err != nil {
				return err
			}
			logLimits(log, cfg)
			if err := cfg.ReadAPIKeyFile(o.getenv); err != nil {
				// Fail closed, as without any key: POST /mcp stays off.
				log.Error("no owner key", "error", err.Error(), "fix", "make gateway.api_key_file a readable file holding the key, and set only one of api_key and api_key_file")
			}
			chatRT, err := chatruntime.Start(cmd.Context(), cfg, o.getenv, log)
			if err != nil {
				return err
			}
			defer closeLogged(log, "chat store", chatRT)
			var budgets gateway.BudgetFactory
			var quotas gateway.QuotaStores
			if chatRT.Pool != nil {
				// A shared store: every replica spends from the same budgets.
				bs, err := pgbudget.Open(cmd.Context(), chatRT.Pool, pgbudget.Options{Logger: log})
				if err != nil {
					return err
				}
				// Token refunds still owed go out before the pool closes.
				defer bs.Flush()
				budgets = func(name string, limit int, window time.Duration) gateway.Counter {
					return bs.Budget(name, limit, window)
				}
				quotas = gateway.QuotaStores{
					Tokens: func(name string, limit int64) gateway.TokenCounter { return bs.Tokens(name, limit) },
					Slots: func(name string, limit int, lease time.Duration) gateway.SlotCounter {
						return bs.Slots(name, limit, lease)
					},
					Joint: bs,
				}
			}
			pw, err := watch.policyWatch(cfg, src.Path)
			if err != nil {
				return err
			}
			g, err := gateway.New(gateway.Options{Config: cfg, Getenv: o.getenv, Logger: log, Version: version, Audit: auditLog,
				Store: chatRT.Store, Sender: chatRT.Sender, ConfigPath: src.Path, ConfigBytes: cfgBytes, Budgets: budgets, Quotas: quotas,
				TracerProvider: tp, PolicyWatch: pw})
			if err != nil {
				return fmt.Errorf("gateway: %w", err)
			}
			built.Store(g)
			return g.Run(cmd.Context(), nil)
		},
	}
	f := cmd.Flags()
	f.StringVar(&watch.namespace, "watch-namespace", "", "namespace of the objects --watch-configmap and --watch-secret name")
	f.StringVar(&watch.configMap, "watch-configmap", "", "ConfigMap the config file is mounted from, watched through the API server (key: the config file's name); needs the other --watch flags")
	f.StringVar(&watch.secret, "watch-secret", "", "Secret the token files are mounted from, watched through the API server; needs the other --watch flags")
	f.StringVar(&watch.secretDir, "watch-secret-dir", "", "directory --watch-secret is mounted on: a token file directly in it is read from the Secret's key of its name while the watch is live")
	return cmd
}

// policyListTimeout bounds one list of a policy object.
const policyListTimeout = 10 * time.Second

// policyWatchFlags name the gateway's policy objects in the cluster.
type policyWatchFlags struct {
	namespace, configMap, secret, secretDir string
}

// policyWatch is the watch the flags ask for: nil when none is set, an
// error naming the flag when they are incomplete.
func (w policyWatchFlags) policyWatch(cfg *config.Config, configPath string) (*gateway.PolicyWatch, error) {
	if w == (policyWatchFlags{}) {
		return nil, nil
	}
	for _, f := range []struct{ name, v string }{
		{"--watch-namespace", w.namespace}, {"--watch-configmap", w.configMap},
		{"--watch-secret", w.secret}, {"--watch-secret-dir", w.secretDir},
	} {
		if f.v == "" {
			return nil, fmt.Errorf("%s is empty: the policy watch needs all four --watch flags", f.name)
		}
	}
	if configPath == "" {
		return nil, errors.New("--watch-configmap needs --config: the ConfigMap's key is the config file's name, and the file is the fallback")
	}
	rc, err := kube.Config(cfg.Gateway.Auth.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("policy watch: %w", err)
	}
	// The bound is for each list; a watch request bounds itself.
	c, err := kube.New(rc, policyListTimeout)
	if err != nil {
		return nil, fmt.Errorf("policy watch: %w", err)
	}
	return &gateway.PolicyWatch{Client: c, Namespace: w.namespace, ConfigMap: w.configMap, Secret: w.secret, SecretDir: w.secretDir}, nil
}

// gatewayGCPercent is the gateway's GOGC unless the variable sets one.
// Its live heap is small (a few MiB) while every request allocates tens of
// KiB (the SDK's decoder buffers among them), so at Go's default of 100 it
// collected every few hundred requests and spent most of its CPU there:
// measured as whole processes under 8 closed-loop clients, 400 doubled
// both tools/list and tools/call throughput and halved CPU per request,
// for a heap that stays in the tens of MiB. GOMEMLIMIT, when set (the
// pod's memory limit), still bounds it.
const gatewayGCPercent = 400

// tuneGC applies gatewayGCPercent unless GOGC is set, and returns the
// value in force, for the start-up line.
func tuneGC(getenv func(string) string) string {
	if v := getenv("GOGC"); v != "" {
		return v
	}
	debug.SetGCPercent(gatewayGCPercent)
	return strconv.Itoa(gatewayGCPercent)
}

// logLimits says once at start which limits callers will meet, so that a
// 429 or an over_budget is not the first a user hears of them.
func logLimits(log *slog.Logger, cfg *config.Config) {
	m := cfg.Gateway.MCPHTTP
	log.Info("limits in force",
		"requests_per_minute_per_address", cfg.Gateway.RateLimit.RequestsPerMinute,
		"ask_budget_per_minute", m.AskBudgetPerMinute,
		"agent_budget_per_minute", m.AgentBudgetPerMinute,
		"send_budget_per_minute", gateway.SendBudgetPerMinute,
		"agent_max_seconds", m.AgentMaxSeconds,
		"settings", "gateway.rate_limit.requests_per_minute, gateway.mcp_http.ask_budget_per_minute, agent_budget_per_minute, agent_max_seconds")
}
