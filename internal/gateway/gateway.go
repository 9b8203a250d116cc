// Package gateway is `garra gateway`: the HTTP MCP bridge (POST /mcp) with
// its four security layers, authentication of the owner and each
// orchestrator, shared budgets, metrics, config reload and drain, plus
// health endpoints and the chat API. Each caller talks to the server
// mcpserver builds for it under mcppolicy's limits. The agent's brain runs
// here; its hands run in each orchestrator's sandbox pod (or a local
// per-orchestrator workspace when no sandbox is configured).
package gateway

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/authn"
	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/egressproxy"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/mcpcancel"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/redact"
	"github.com/garraia/garra/internal/tools"
	"github.com/garraia/garra/internal/unbuffered"
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
	// ConfigPath is the file Config was read from, re-read on change by
	// Run (see Reload); "" = no live reload. ConfigBytes is its content
	// as read, whose hash /readyz reports.
	ConfigPath  string
	ConfigBytes []byte
	// ReloadResync is how often Run re-reads the files even without a
	// change event; 0 = filewatch.DefaultResync.
	ReloadResync time.Duration
	// PolicyWatch, with a ConfigPath, makes Run watch the objects the
	// config and token files are mounted from and reload from them as
	// they change (the files stay the fallback); nil = files only.
	PolicyWatch *PolicyWatch
	// Budgets makes the send, ask and agent budgets and the per-IP
	// limits; nil = in this process's memory. A shared factory makes them
	// hold across replicas.
	Budgets BudgetFactory
	// Quotas make the orchestrators' token and run-slot quotas; zero =
	// in this process's memory.
	Quotas QuotaStores
	// Waker wakes idle-suspended sandboxes; nil means the Deployments API
	// of the cluster the gateway runs in (built on first use).
	Waker Waker
	// Reviewer sends the TokenReviews of serviceAccount orchestrators;
	// nil = a client of the in-cluster API server (or of
	// gateway.auth.kubeconfig), built when a config first needs one.
	Reviewer authn.Reviewer
	// TracerProvider traces MCP requests, LLM calls and sandbox calls;
	// nil = tracing off, and nothing is instrumented.
	TracerProvider trace.TracerProvider
	// EgressRootCAs verify the upstreams of the egress proxy; nil is the
	// system's roots. Tests pass their loopback servers' certificates.
	EgressRootCAs *x509.CertPool
}

// requestIDHeader carries the id of a call's HTTP request from the
// mcpcancel middleware to the tool handler.
const requestIDHeader = "Garra-Gateway-Request-Id"

// Gateway is a configured gateway; Handler serves it. What a config
// decides lives in a policy snapshot, swapped whole on a reload; what
// must outlive a reload (budgets' spending, the per-IP limiter, metrics,
// the audit file, the chat store) lives here.
type Gateway struct {
	getenv      func(string) string
	log         *slog.Logger
	version     string
	store       chat.Store
	sender      chat.Sender
	newProvider ask.NewProviderFunc
	sendBudget  Counter
	askBudget   Counter
	agentBudget Counter
	limiter     *RateLimiter
	quotas      *quotas
	retry       *retryAfters
	metrics     *metrics
	audit       *audit.Log
	now         func() time.Time
	started     time.Time
	sdkLog      *slog.Logger
	reqCtx      *mcpcancel.Requests
	reviewers   *reviewers
	tracing     trace.TracerProvider // nil = off
	egressRoots *x509.CertPool       // nil = the system's

	cur         atomic.Pointer[policy]
	configPath  string
	resync      time.Duration
	reload      reloadState
	policyWatch *PolicyWatch
	watched     watched

	// Draining: flightMu orders the draining flag against flight.Add, so
	// that no request is counted after the drain started waiting.
	flightMu sync.Mutex
	draining bool
	flight   sync.WaitGroup
	hardStop chan struct{} // closed at the drain deadline
	stopOnce sync.Once
	// handingOver is set on SIGTERM for gateway.handover_seconds before
	// the drain: requests are still served, each closing its connection.
	handingOver atomic.Bool
	// verify holds the last handshake with each sandbox (GET /sandboxz).
	verify *verifier
	// wakes wakes idle-suspended sandboxes.
	wakes *wakes
}

// policy is one configuration's immutable view: the config, the callers
// and their MCP servers, redactors, the ask core. A request loads it once
// and finishes under it, whatever is swapped in meanwhile. The embedded
// Gateway gives its handlers the shared parts.
type policy struct {
	*Gateway
	cfg         *config.Config
	hash        string // sha256:<hex> of the config file's bytes; "" without a file
	fingerprint string // hash plus the token files' contents
	// secrets reads the secret files cfg names (the sandbox tokens at
	// each call): from disk, or from the watched Secret.
	secrets    config.SecretReader
	limits     mcppolicy.Limits
	callers    *callers
	servers    map[string]*lazyServer // by caller name
	askCore    *ask.Core
	red        *redact.Redactor    // built-ins + redact_patterns + secret values
	builtinRed *redact.Redactor    // built-ins + secret values (history, ask success)
	egress     *tools.EgressGuard  // web_fetch in local workspaces, and the egress proxy's upstreams
	egressOut  *egressproxy.Policy // the egress proxy's; nil without gateway.egress.listen
	mounted    bool
	mcp        http.Handler // nil when /mcp is not mounted
	// resourceMetadata serves RFC 9728 metadata; nil when /mcp is not mounted.
	resourceMetadata http.Handler
	api              map[string]http.Handler // chat API routes; nil without a key
	sandboxz         http.Handler            // GET /sandboxz; nil without a key
}

// warnOnly passes records of level warn and above.
type warnOnly struct{ slog.Handler }

func (w warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}

func (w warnOnly) WithAttrs(a []slog.Attr) slog.Handler { return warnOnly{w.Handler.WithAttrs(a)} }

func (w warnOnly) WithGroup(n string) slog.Handler { return warnOnly{w.Handler.WithGroup(n)} }

// SendBudgetPerMinute is how many garra_send_message calls all callers
// together may make a minute: one leaked token must not turn the bot
// into a spam cannon.
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
	limiter := NewRateLimiter(max(1, cfg.Gateway.RateLimit.RequestsPerMinute), time.Minute, o.Now)
	if o.Budgets == nil {
		o.Budgets = memoryBudgets(o.Now)
	} else {
		limiter.newBudget, limiter.shared = o.Budgets, true
	}
	g := &Gateway{
		getenv: o.Getenv, log: o.Logger, version: o.Version, verify: newVerifier(),
		store: o.Store, sender: o.Sender, newProvider: o.NewProvider,
		sendBudget:  o.Budgets("send", SendBudgetPerMinute, time.Minute),
		askBudget:   o.Budgets("ask", m.AskBudgetPerMinute, time.Minute),
		agentBudget: o.Budgets("agent", m.AgentBudgetPerMinute, time.Minute),
		limiter:     limiter,
		quotas:      newQuotas(o.Budgets, o.Quotas, o.Now),
		retry:       &retryAfters{m: map[string]time.Duration{}},
		audit:       o.Audit,
		reqCtx:      mcpcancel.New(requestIDHeader),
		now:         o.Now,
		started:     o.Now(),
		configPath:  o.ConfigPath,
		resync:      o.ReloadResync,
		policyWatch: o.PolicyWatch,
		hardStop:    make(chan struct{}),
		reviewers:   &reviewers{given: o.Reviewer},
		wakes:       &wakes{given: o.Waker},
		tracing:     o.TracerProvider,
		egressRoots: o.EgressRootCAs,
	}
	// The SDK logs every stateless POST at info (connect, disconnect):
	// keep only its warnings.
	g.sdkLog = slog.New(warnOnly{o.Logger.Handler()})
	g.metrics = newMetrics(map[string]Counter{"send": g.sendBudget, "ask": g.askBudget, "agent": g.agentBudget})
	g.metrics.registry.MustRegister(g.quotas.refusals, quotaCollector{g})
	hash := ""
	if o.ConfigBytes != nil {
		hash = configHash(o.ConfigBytes)
	}
	p, err := g.newPolicy(cfg, hash, fingerprint(hash, cfg, nil), nil)
	if err != nil {
		return nil, err
	}
	g.cur.Store(p)
	g.reload.set(true, nil)
	g.metrics.loaded(hash)
	return g, nil
}

// newPolicy builds the snapshot of cfg, whose secret files read reads
// (nil: the disk). It validates what the tools cannot run without;
// everything else fails closed with a warning.
func (g *Gateway) newPolicy(cfg *config.Config, hash, fp string, read config.SecretReader) (*policy, error) {
	if read == nil {
		read = config.ReadSecretFile
	}
	m := cfg.Gateway.MCPHTTP
	if m.AgentMaxSeconds < config.MinAgentMaxSeconds || m.AgentMaxSeconds > config.MaxAgentMaxSeconds {
		return nil, fmt.Errorf("gateway.mcp_http.agent_max_seconds: %d is outside [%d, %d]", m.AgentMaxSeconds, config.MinAgentMaxSeconds, config.MaxAgentMaxSeconds)
	}
	if m.MaxHistoryMessages < 1 {
		return nil, fmt.Errorf("gateway.mcp_http.max_history_messages: %d must be at least 1", m.MaxHistoryMessages)
	}
	red, badPatterns := redact.New(m.RedactPatterns)
	for _, err := range badPatterns {
		g.log.Warn("redact pattern ignored", "error", err, "fix", "run garra config check")
	}
	// Every key and token this process holds is redacted by value too,
	// whatever its shape: in answers, errors, history and summaries.
	builtinRed := redact.Default().WithSecrets(cfg.SecretValuesWith(g.getenv, read)...)
	p := &policy{
		Gateway: g, cfg: cfg, hash: hash, fingerprint: fp, secrets: read,
		limits:     mcppolicy.GatewayLimits(cfg),
		red:        red.WithSecretsOf(builtinRed),
		builtinRed: builtinRed,
		egress:     webFetchGuard(m, g.log),
	}
	if cfg.Gateway.Egress.Listen != "" {
		p.egressOut = g.egressPolicy(cfg, read)
	}
	p.askCore = &ask.Core{Config: cfg, Redactor: p.builtinRed, Getenv: g.getenv, NewProvider: g.newProvider, Retries: ask.DefaultRetries, Now: g.now,
		TracerProvider: g.tracing}

	switch {
	case !m.Enabled:
		g.log.Info("MCP bridge disabled: POST /mcp is not registered", "enable", "gateway.mcp_http.enabled: true")
	case cfg.Gateway.APIKey == "":
		g.log.Warn("MCP bridge NOT mounted: gateway.mcp_http.enabled is true but there is no credential; /mcp answers 404",
			"fix", "set gateway.api_key or "+config.EnvGatewayAPIKey)
	default:
		p.mounted = true
		deps := g.callerDeps(cfg)
		deps.read = read
		p.callers = callersFrom(cfg, g.getenv, g.log, deps)
		p.servers = make(map[string]*lazyServer, len(p.callers.byName))
		for name, c := range p.callers.byName {
			p.servers[name] = p.lazyMCPServer(c)
		}
		p.materializeWorkspaces()
		p.mcp = p.mcpHandler()
		p.resourceMetadata = p.resourceMetadataHandler()
		host := "so loopback"
		if len(cfg.Gateway.AllowedHosts) > 0 {
			host = fmt.Sprintf("loopback + %d allowed_hosts", len(cfg.Gateway.AllowedHosts))
		}
		g.log.Info(fmt.Sprintf("ponte MCP Streamable HTTP montada (host: %s) rota=/mcp envio_liberado=%t destinos_liberados=%d",
			host, m.AllowSend, len(cfg.Channels.Telegram.ProactiveChatIDs)))
	}
	p.api = p.chatAPI()
	p.sandboxz = p.ownerOnly(http.HandlerFunc(p.apiSandboxes))
	return p, nil
}

// Redactor is the redaction in force: the built-in rules, the config's
// redact_patterns and every secret value it names. The trace exporter
// asks it for each batch, so a reload's new secrets are covered.
func (g *Gateway) Redactor() *redact.Redactor { return g.cur.Load().red }

// Handler is the gateway's HTTP surface. Each request loads the policy
// in force once; /mcp and the chat API exist when that policy mounts them.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /readyz", g.readyz)
	mux.Handle("GET /metrics", g.metrics.handler())
	mux.Handle("/mcp", g.inFlight(func(p *policy) http.Handler { return p.mcp }))
	// RFC 9728: at the root and, as the MCP authorization spec has
	// clients look first, at the endpoint's path.
	meta := g.inFlight(func(p *policy) http.Handler { return p.resourceMetadata })
	mux.Handle("/.well-known/oauth-protected-resource", meta)
	mux.Handle("/.well-known/oauth-protected-resource/mcp", meta)
	mux.Handle(sandboxzRoute, g.inFlight(func(p *policy) http.Handler { return p.sandboxz }))
	for _, route := range chatAPIRoutes {
		mux.Handle(route, g.inFlight(func(p *policy) http.Handler { return p.api[route] }))
	}
	return unbuffered.SSE(mux)
}

// inFlight serves a request with the handler pick finds in the current
// policy (404 when there is none), counted for the drain; while draining,
// new requests get 503.
func (g *Gateway) inFlight(pick func(*policy) http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := pick(g.cur.Load())
		if h == nil {
			http.NotFound(w, r)
			return
		}
		g.flightMu.Lock()
		if g.draining {
			g.flightMu.Unlock()
			w.Header().Set("Retry-After", "5")
			writeRefusal(w, g.refusedHTTP, errkinds.RefuseDraining)
			return
		}
		g.flight.Add(1)
		g.flightMu.Unlock()
		defer g.flight.Done()
		if g.handingOver.Load() {
			// The client's next call opens a new connection, which the
			// load balancer sends to a replica that is staying.
			w.Header().Set("Connection", "close")
		}
		h.ServeHTTP(w, r)
	})
}

// mcpHandler stacks the layers in the spec's places: rate limit and origin
// guard (inherited router layers), Host validation, the api-key gate, the
// rest of a batch's charge against the rate limit, the Accept rule, the
// cancellation notices, then the SDK's stateless transport (415, 413):
// JSON responses, or an event stream for a call that asked for progress.
// It is this policy's: its callers, its servers, its allowed hosts.
func (g *policy) mcpHandler() http.Handler {
	sdk := func(jsonResponse bool) http.Handler {
		return mcp.NewStreamableHTTPHandler(func(r *http.Request) *mcp.Server {
			c, ok := callerFrom(r.Context())
			if !ok {
				return nil
			}
			s, ok := g.servers[c.Name]
			if !ok {
				return nil
			}
			return s.get()
		}, &mcp.StreamableHTTPOptions{
			Stateless:           true,
			JSONResponse:        jsonResponse,
			MaxRequestBodyBytes: MaxBodyBytes,
			// Our hostGuard applies the same rule on every interface and adds
			// allowed_hosts, which the SDK's loopback-only check cannot.
			DisableLocalhostProtection: true,
			Logger:                     g.sdkLog,
			// A client that goes away cancels its call (2026-07-28; older
			// versions through g.reqCtx).
			PropagateRequestCancellation: true,
		})
	}
	refused := g.refusedHTTP
	h := g.reqCtx.BindKeyed(requestKey, g.retry.header(streamOrJSON(sdk(true), sdk(false))))
	h = g.cancelNotices(g.reqCtx, h)
	h = readShape(h)
	h = acceptGuard(refused, h)
	h = g.limiter.batchCharge(refused, h)
	h = countAdmitted(g.metrics, g.cfg.Gateway.Metrics.OrchestratorLabels, h)
	h = requireBearer(g.callers, g.resourceMetadataURL, refused, g.log, h)
	h = hostGuard(g.cfg.Gateway.AllowedHosts, refused, h)
	h = originGuard(refused, h)
	h = g.limiter.middleware(refused, h)
	return h
}

// refusedHTTP counts a refusal of the HTTP layers and audits it. The rate
// limiter's 429s are counted, not audited: a flood must not rotate the
// audit file's history away.
func (g *Gateway) refusedHTTP(kind errkinds.Kind) {
	g.metrics.refused(kind)
	if kind != errkinds.TooManyRequests {
		g.audit.Record(audit.Record{Surface: audit.SurfaceHTTP, Outcome: audit.OutcomeRefused, Kind: kind})
	}
}
