// Package mcpserver builds the MCP server one caller talks to, the same
// way on both surfaces: `garra mcp-server` builds one for its local user,
// the gateway one per owner and orchestrator. New registers exactly the
// tools, resources and prompts mcppolicy lets that caller see; each tool
// is declared once (its input type, schema, validation and envelope), and
// every call goes through one path that refuses, validates, charges the
// budget, runs, redacts and writes the audit line, in the specs' order.
//
// It is only a dispatcher: it writes nothing to stdout, spawns no process,
// opens no network connection and constructs no agent tool. The agent, the
// ask core, the chat store and the sandbox are handed in; audit tests over
// this package's source keep it that way.
package mcpserver

import (
	"context"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/agent"
	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/quota"
	"github.com/garraia/garra/internal/redact"
	"github.com/garraia/garra/internal/toolchain"
)

// The MCP implementation names reported at initialize.
const (
	StdioName   = "garra"
	GatewayName = "garra-gateway"
)

// Asker is the one-shot core (internal/ask.Core).
type Asker interface {
	Normalize(ask.Request) (ask.Request, error)
	Ask(context.Context, ask.Request) ask.Envelope
}

// AgentRunner runs one garra_agent call for the server's caller. An error
// means the call's working_dir was refused (invalid params); every other
// failure is in the envelope.
type AgentRunner interface {
	RunAgent(ctx context.Context, c agent.Call) (agent.Envelope, error)
}

// Budget is a per-minute budget as a tool spends it (the gateway's
// Counter). A refused take costs nothing.
type Budget interface {
	Take() bool
	Remaining() int
	Limit() int
}

// Budgets are the gateway's shared budgets; a nil one is never charged.
type Budgets struct {
	Send, Ask, Agent Budget
}

// Options are who calls, the limits in force and what the tools run on.
type Options struct {
	// Caller is who the server answers: mcppolicy.LocalUser() on stdio,
	// the owner or one orchestrator on the gateway.
	Caller mcppolicy.Caller
	// Limits are the operator's settings in force. HasAgent is taken
	// from Agent.
	Limits  mcppolicy.Limits
	Version string
	// Logger receives one line per call and resource read (on stdio it
	// writes to stderr through the redactor). SDKLogger is the go-sdk's
	// own log; nil = Logger.
	Logger    *slog.Logger
	SDKLogger *slog.Logger
	Now       func() time.Time
	// Audit receives one line per tool call, resource read and refusal;
	// nil = no audit file (the log line is written either way).
	Audit *audit.Log
	Ask   Asker
	// Agent runs garra_agent; nil = no garra_agent.
	Agent AgentRunner
	// Budgets are charged after the refusal chain and the argument checks
	// pass, so a refused call costs nothing.
	Budgets Budgets
	// Quota is the caller's own allowance (an orchestrator's on the
	// gateway), charged before Budgets; nil = none.
	Quota *quota.Set
	// RetryAfter is told how long a call refused by Quota should wait
	// (the gateway's Retry-After header); nil = none.
	RetryAfter func(req *mcp.CallToolRequest, d time.Duration)
	// Redactor is the operator's patterns and secret values, applied where
	// the gateway's spec puts them on top of the built-ins: garra_ask's
	// error path and the text garra_send_message sends. nil on stdio,
	// whose ask core already redacts with them.
	Redactor *redact.Redactor
	// Observe is told every call's outcome and latency (the gateway's
	// metrics); nil = none.
	Observe func(tool, outcome string, kind errkinds.Kind, d time.Duration)
	// CallContext derives the context a tool call runs under (the
	// gateway's: the HTTP request's cancellation and the drain's hard
	// stop); nil = the SDK's.
	CallContext func(ctx context.Context, req *mcp.CallToolRequest) (context.Context, context.CancelFunc)
	// Chats backs the gateway's conversation tools and resources; nil on
	// stdio.
	Chats *Chats
	// Toolchain reads the caller's own sandbox toolchain (for
	// garra://sandbox/toolchain); nil when it has no sandbox.
	Toolchain func(ctx context.Context) (toolchain.Report, error)
	// OnboardEndpoint is onboard_orchestrator's default endpoint.
	OnboardEndpoint string
	// FileRoots is how many roots garra_agent's file tools resolved, for
	// the stdio garra://policy (the paths themselves are not shown).
	FileRoots int
	// Middleware is installed outermost, after the server's own (the
	// tracing of a traced process).
	Middleware []mcp.Middleware
}

// Chats are the gateway's conversations as its tools reach them.
type Chats struct {
	Store  chat.Store
	Sender chat.Sender
	// Approved are channels.telegram.proactive_chat_ids: the only
	// destinations garra_send_message may reach.
	Approved []string
	// Redactor is the built-in rules and the secret values: what history
	// and titles pass through.
	Redactor *redact.Redactor
	// Started is when the gateway started, for garra_status's uptime.
	Started time.Time
}

// server is one caller's server: its options and the tools it knows.
type server struct {
	o     Options
	c     mcppolicy.Caller
	l     mcppolicy.Limits
	tools map[string]*tool // the tools on this caller's surface, by name
}

// New builds the server o.Caller talks to.
func New(o Options) *mcp.Server {
	s := newServer(o)
	srv := mcp.NewServer(&mcp.Implementation{Name: s.name(), Version: o.Version}, s.serverOptions())
	for _, name := range mcppolicy.Visible(s.c, s.l) {
		t := s.tools[name]
		srv.AddTool(t.describe(s), func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return s.serve(ctx, req, t)
		})
	}
	s.addResources(srv)
	s.addPrompts(srv)
	srv.AddReceivingMiddleware(s.auditMiddleware)
	for _, m := range s.o.Middleware {
		srv.AddReceivingMiddleware(m)
	}
	return srv
}

// newServer completes o and picks the tools of its caller's surface.
func newServer(o Options) *server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.SDKLogger == nil {
		o.SDKLogger = o.Logger
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Chats == nil {
		// No conversations: the chat tools answer with empty lists.
		o.Chats = &Chats{Store: chat.Empty{}, Sender: chat.Empty{}, Redactor: redact.Default()}
	}
	if o.Redactor == nil && o.Caller.OnGateway() {
		// What the gateway sends out gets the built-ins at least.
		o.Redactor = redact.Default()
	}
	o.Limits.HasAgent = o.Agent != nil
	o.Limits = o.Limits.WithDefaults()
	s := &server{o: o, c: o.Caller, l: o.Limits, tools: map[string]*tool{}}
	for _, t := range allTools {
		if mcppolicy.OnSurface(s.c, t.name) {
			s.tools[t.name] = t
		}
	}
	return s
}

// local reports whether the server is the stdio one.
func (s *server) local() bool { return !s.c.OnGateway() }

func (s *server) name() string {
	if s.local() {
		return StdioName
	}
	return GatewayName
}

// serverOptions are the SDK options of the surface. The capabilities are
// fixed rather than inferred from what is registered, so that a caller
// that may see no tool is told the same as every other.
func (s *server) serverOptions() *mcp.ServerOptions {
	so := &mcp.ServerOptions{
		Logger: s.o.SDKLogger,
		Capabilities: &mcp.ServerCapabilities{
			// The SDK's own default, which clients have always been told
			// (logging/setLevel is answered).
			Logging: &mcp.LoggingCapabilities{}, //nolint:staticcheck // deprecated at 2026-07-28; kept for 2025-11-25 clients
			// No listChanged: a server's lists never change under it (a
			// config reload builds new servers), so no notice would come.
			Tools:     &mcp.ToolCapabilities{},
			Resources: &mcp.ResourceCapabilities{},
			Prompts:   &mcp.PromptCapabilities{},
		},
	}
	if s.local() {
		so.Instructions = "Garra: garra_ask sends one question to an LLM provider and returns a garra.ask.v1 JSON envelope. garra://policy shows the operator's limits in force."
		return so
	}
	so.Instructions = "Garra gateway: tools/list and resources/list show exactly what this caller may use; garra://policy is its own policy."
	// Every list and read is this caller's own view.
	so.SetCacheable = func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.CacheScope = "private" }
	return so
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func ptr[T any](v T) *T { return &v }
