// Package gateway is `garra gateway`: the HTTP MCP bridge (POST /mcp, seven
// tools) with its four security layers, per-caller policy, shared budgets,
// redaction, audit lines and metrics, plus health endpoints. The agent's
// brain runs here; its hands run in each orchestrator's sandbox pod (or a
// local per-orchestrator workspace when no sandbox is configured).
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/redact"
	"github.com/garraia/garra/internal/tools"
)

// MaxBodyBytes caps a POST /mcp body (413 beyond).
const MaxBodyBytes = 4 << 20

// Options configures a Gateway.
type Options struct {
	Config  *config.Config
	Getenv  func(string) string
	Logger  *slog.Logger
	Version string
	// Store and Sender back the chat tools; nil = chat.Empty.
	Store  chat.Store
	Sender chat.Sender
	// NewProvider builds LLM clients (tests inject loopback doubles).
	NewProvider ask.NewProviderFunc
	Now         func() time.Time
	// Audit receives one line per tool call, resource read and refusal;
	// nil = no audit file (the stderr line is written either way).
	Audit *audit.Log
}

// Gateway is a configured gateway; Handler serves it.
type Gateway struct {
	cfg         *config.Config
	getenv      func(string) string
	log         *slog.Logger
	version     string
	store       chat.Store
	sender      chat.Sender
	switches    Switches
	creds       []credential
	servers     map[string]*mcp.Server // by caller name
	askCore     *ask.Core
	red         *redact.Redactor // built-ins + redact_patterns + secret values
	builtinRed  *redact.Redactor // built-ins + secret values (history, ask success)
	sendBudget  *Budget
	askBudget   *Budget
	agentBudget *Budget
	egress      *tools.EgressGuard // web_fetch in local workspaces
	limiter     *RateLimiter
	metrics     *metrics
	audit       *audit.Log
	now         func() time.Time
	started     time.Time
	mounted     bool
	sdkLog      *slog.Logger
	reqCtx      *requestContexts
}

// warnOnly passes records of level warn and above.
type warnOnly struct{ slog.Handler }

func (w warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

func (w warnOnly) WithAttrs(a []slog.Attr) slog.Handler { return warnOnly{w.Handler.WithAttrs(a)} }

func (w warnOnly) WithGroup(n string) slog.Handler { return warnOnly{w.Handler.WithGroup(n)} }

// SendBudgetPerMinute is the shared anti-amplification budget of
// garra_send_message (spec §4.2).
const SendBudgetPerMinute = 5

// New validates the configuration and builds the gateway. Problems that
// only disable a feature (no key, an orchestrator without its token) are
// logged once, not fatal: the gateway fails closed around them.
func New(o Options) (*Gateway, error) {
	if o.Config == nil {
		return nil, errors.New("gateway: no config")
	}
	if o.Getenv == nil {
		return nil, errors.New("gateway: no getenv")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Store == nil {
		o.Store = chat.Empty{}
	}
	if o.Sender == nil {
		o.Sender = chat.Empty{}
	}
	cfg := o.Config
	m := cfg.Gateway.MCPHTTP
	if m.AgentMaxSeconds < config.MinAgentMaxSeconds || m.AgentMaxSeconds > config.MaxAgentMaxSeconds {
		return nil, fmt.Errorf("gateway.mcp_http.agent_max_seconds: %d is outside [%d, %d]", m.AgentMaxSeconds, config.MinAgentMaxSeconds, config.MaxAgentMaxSeconds)
	}
	if m.MaxHistoryMessages < 1 {
		return nil, fmt.Errorf("gateway.mcp_http.max_history_messages: %d must be at least 1", m.MaxHistoryMessages)
	}
	red, badPatterns := redact.New(m.RedactPatterns)
	for _, err := range badPatterns {
		o.Logger.Warn("redact pattern ignored", "error", err, "fix", "run garra config check")
	}
	// Every key and token this process holds is redacted by value too,
	// whatever its shape: in answers, errors, history and summaries.
	secrets := cfg.SecretValues(o.Getenv)
	red = red.WithSecrets(secrets...)
	g := &Gateway{
		cfg: cfg, getenv: o.Getenv, log: o.Logger, version: o.Version,
		store: o.Store, sender: o.Sender,
		switches:    SwitchesFrom(cfg),
		red:         red,
		builtinRed:  redact.Default().WithSecrets(secrets...),
		sendBudget:  NewBudget(SendBudgetPerMinute, time.Minute, o.Now),
		askBudget:   NewBudget(m.AskBudgetPerMinute, time.Minute, o.Now),
		agentBudget: NewBudget(m.AgentBudgetPerMinute, time.Minute, o.Now),
		egress:      webFetchGuard(m, o.Logger),
		limiter:     NewRateLimiter(max(1, cfg.Gateway.RateLimit.RequestsPerMinute), time.Minute, o.Now),
		audit:       o.Audit,
		reqCtx:      newRequestContexts(),
		now:         o.Now,
		started:     o.Now(),
	}
	// The SDK logs every stateless POST at info (connect, disconnect):
	// keep only its warnings.
	g.sdkLog = slog.New(warnOnly{o.Logger.Handler()})
	g.askCore = &ask.Core{Config: cfg, Redactor: g.builtinRed, Getenv: o.Getenv, NewProvider: o.NewProvider, Retries: ask.DefaultRetries, Now: o.Now}
	g.metrics = newMetrics(map[string]*Budget{"send": g.sendBudget, "ask": g.askBudget, "agent": g.agentBudget})

	switch {
	case !m.Enabled:
		g.log.Info("MCP bridge disabled: POST /mcp is not registered", "enable", "gateway.mcp_http.enabled: true")
	case cfg.Gateway.APIKey == "":
		g.log.Warn("MCP bridge NOT mounted: gateway.mcp_http.enabled is true but there is no credential; /mcp answers 404",
			"fix", "set gateway.api_key or "+config.EnvGatewayAPIKey)
	default:
		g.mounted = true
		g.creds = callersFrom(cfg, o.Getenv, g.log)
		g.servers = map[string]*mcp.Server{}
		for _, c := range g.creds {
			g.servers[c.caller.Name] = g.newMCPServer(c.caller)
		}
		g.materializeWorkspaces()
		host := "so loopback"
		if len(cfg.Gateway.AllowedHosts) > 0 {
			host = fmt.Sprintf("loopback + %d allowed_hosts", len(cfg.Gateway.AllowedHosts))
		}
		g.log.Info(fmt.Sprintf("ponte MCP Streamable HTTP montada (host: %s) rota=/mcp envio_liberado=%t destinos_liberados=%d",
			host, m.AllowSend, len(cfg.Channels.Telegram.ProactiveChatIDs)))
	}
	return g, nil
}

// Handler is the gateway's HTTP surface.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", g.readyz)
	mux.Handle("GET /metrics", g.metrics.handler())
	if g.mounted {
		mux.Handle("/mcp", g.mcpHandler())
	}
	g.mountChatAPI(mux)
	return mux
}

// mcpHandler stacks the layers in the spec's places: rate limit and origin
// guard (inherited router layers), Host validation, the api-key gate, the
// rest of a batch's charge against the rate limit, the Accept rule, then
// the SDK's stateless JSON transport (415, 413).
func (g *Gateway) mcpHandler() http.Handler {
	sdk := mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
		c, ok := callerFrom(r.Context())
		if !ok {
			return nil
		}
		return g.servers[c.Name]
	}, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		MaxRequestBodyBytes: MaxBodyBytes,
		// Our hostGuard applies the same rule on every interface and adds
		// allowed_hosts, which the SDK's loopback-only check cannot.
		DisableLocalhostProtection: true,
		Logger:                     g.sdkLog,
		// A client that goes away cancels its call (2026-07-28; older
		// versions through g.reqCtx).
		PropagateRequestCancellation: true,
	})
	refused := g.refusedHTTP
	h := g.reqCtx.bind(sdk)
	h = acceptGuard(refused, h)
	h = g.limiter.batchCharge(refused, h)
	h = requireBearer(g.creds, refused, h)
	h = hostGuard(g.cfg.Gateway.AllowedHosts, refused, h)
	h = originGuard(refused, h)
	h = g.limiter.middleware(refused, h)
	return h
}

// refusedHTTP counts a refusal of the HTTP layers and audits it. The rate
// limiter's 429s are counted, not audited: a flood must not rotate the
// audit file's history away.
func (g *Gateway) refusedHTTP(kind string) {
	g.metrics.refused(kind)
	if kind != KindRateLimited {
		g.audit.Record(audit.Record{Surface: audit.SurfaceHTTP, Outcome: audit.OutcomeRefused, Kind: kind})
	}
}

func (g *Gateway) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if _, err := g.store.Conversations(ctx, ""); err != nil {
		http.Error(w, "conversation store unavailable", http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// Run serves on gateway.listen until ctx ends, then shuts down gracefully.
// ready, when not nil, receives the bound address once listening.
func (g *Gateway) Run(ctx context.Context, ready func(addr net.Addr)) error {
	ln, err := net.Listen("tcp", g.cfg.Gateway.Listen)
	if err != nil {
		return fmt.Errorf("gateway.listen %s: %w", g.cfg.Gateway.Listen, err)
	}
	srv := &http.Server{Handler: g.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	g.log.Info("garra gateway listening", "addr", ln.Addr().String())
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		shutdown, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		return srv.Shutdown(shutdown)
	}
}
