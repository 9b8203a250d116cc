package gateway

import (
	"context"
	"net"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/mcpserver"
	"github.com/garraia/garra/internal/mcptrace"
	"github.com/garraia/garra/internal/quota"
	"github.com/garraia/garra/internal/toolchain"
)

// lazyServer is a caller's server, built on the caller's first request
// under the policy. Building one registers every tool with its schema,
// a fraction of a millisecond; a policy of a thousand orchestrators built
// them all on every reload, most for callers that would not call before
// the next one. A request then costs one atomic load more.
type lazyServer struct {
	once  sync.Once
	build func() *mcp.Server
	s     *mcp.Server
}

func (l *lazyServer) get() *mcp.Server {
	l.once.Do(func() { l.s, l.build = l.build(), nil })
	return l.s
}

// lazyMCPServer is newMCPServer on first use. The caller's quota is set
// now: a reload's new limits apply to what is counted at once, not at the
// caller's next request.
func (g *policy) lazyMCPServer(c mcppolicy.Caller) *lazyServer {
	q := g.quotas.set(c, g.cfg.Gateway.MCPHTTP, g.cfg.Gateway.Metrics.OrchestratorLabels)
	return &lazyServer{build: func() *mcp.Server { return g.newMCPServer(c, q) }}
}

// newMCPServer builds the server a caller talks to, with this policy's
// limits, budgets, redactors and stores, and q its quota. It shows the
// caller exactly what it may use; a hidden tool called by name is refused
// with its stable kind, never "unknown".
func (g *policy) newMCPServer(c mcppolicy.Caller, q *quota.Set) *mcp.Server {
	o := mcpserver.Options{
		Caller: c, Limits: g.limits, Version: g.version,
		Logger: g.log, SDKLogger: g.sdkLog, Now: g.now, Audit: g.audit,
		Ask:   g.askCore,
		Agent: callerAgent{g, c},
		Chats: &mcpserver.Chats{Store: g.store, Sender: g.sender, Approved: g.cfg.Channels.Telegram.ProactiveChatIDs,
			Redactor: g.builtinRed, Started: g.started},
		Budgets:         mcpserver.Budgets{Send: g.sendBudget, Ask: g.askBudget, Agent: g.agentBudget},
		Quota:           q,
		RetryAfter:      g.retry.note,
		Redactor:        g.red,
		Observe:         g.metrics.observe,
		CallContext:     g.callContext,
		OnboardEndpoint: g.endpoint(),
	}
	if c.HasSandbox() {
		o.Toolchain = func(ctx context.Context) (toolchain.Report, error) {
			return g.readSandboxToolchain(ctx, c, toolchainReadTimeout)
		}
	}
	if g.tracing != nil {
		// Outermost: the span covers the server's own middleware too.
		o.Middleware = []mcp.Middleware{mcptrace.ServerMiddleware(g.tracing, mcptrace.TransportTCP)}
	}
	return mcpserver.New(o)
}

// callContext is what a tool call runs under: cancelled when its HTTP
// request goes away (whatever the protocol version) and at the drain's
// hard stop.
func (g *policy) callContext(ctx context.Context, req *mcp.CallToolRequest) (context.Context, context.CancelFunc) {
	ctx, cancel := g.reqCtx.CallContext(ctx, req)
	ctx, stop := g.untilHardStop(ctx)
	return ctx, func() { stop(); cancel() }
}

// endpoint is the default onboarding URL: this gateway's listen address,
// with an unspecified host (0.0.0.0, ::) shown as loopback.
func (g *policy) endpoint() string {
	host, port, err := net.SplitHostPort(g.cfg.Gateway.Listen)
	if err != nil {
		return "http://" + config.DefaultListen + "/mcp"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/mcp"
}
