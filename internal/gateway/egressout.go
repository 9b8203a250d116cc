package gateway

import (
	"context"
	"fmt"
	"net"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/egressproxy"
	"github.com/garraia/garra/internal/mcppolicy"
)

// egressPolicy builds the egress proxy's policy of cfg, its secret files
// read by read, lending it the certificate cache of the one in force.
// What cannot be built (an unreadable credential, a CA that does not
// load) fails closed and is logged by field.
func (g *Gateway) egressPolicy(cfg *config.Config, read config.SecretReader) *egressproxy.Policy {
	var prev *egressproxy.Policy
	if cur := g.cur.Load(); cur != nil {
		prev = cur.egressOut
	}
	pol, errs := egressproxy.Build(cfg, g.getenv, read, prev)
	for _, err := range errs {
		g.log.Warn("egress proxy: part of the policy is disabled", "problem", err.Error(), "fix", "run garra config check")
	}
	return pol
}

// ServeEgress serves the egress proxy on ln until ctx ends: each request
// is decided under the policy in force when it arrives, and connects
// upward through the web_fetch guard of that policy. Run calls it when
// gateway.egress.listen is set.
func (g *Gateway) ServeEgress(ctx context.Context, ln net.Listener) error {
	px := egressproxy.New(egressproxy.Options{
		Policy: func() *egressproxy.Policy { return g.cur.Load().egressOut },
		Dial: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return g.cur.Load().egress.DialContext(ctx, network, addr)
		},
		RootCAs:        g.egressRoots,
		Observe:        g.egressUsed,
		TracerProvider: g.tracing,
		Logger:         g.log,
	})
	return px.Serve(ctx, ln)
}

// egressUsed records one use of the egress proxy: an audit line, the
// metric. Neither holds a credential's value; a host that was refused as
// outside the allowlist is caller-chosen text and goes in as a pseudonym.
func (g *Gateway) egressUsed(u egressproxy.Use) {
	named := g.cur.Load().cfg.Gateway.Metrics.OrchestratorLabels
	caller, cred := "unauthenticated", "none"
	if u.Orchestrator != "" {
		caller = callerLabel(mcppolicy.Caller{Name: u.Orchestrator}, named)
	}
	if u.Credential != "" {
		cred = "credential"
		if named {
			cred = u.Credential
		}
	}
	result := u.Action.String()
	if u.Kind != "" {
		result = string(u.Kind)
	}
	g.metrics.egress.WithLabelValues(caller, cred, result).Inc()
	g.metrics.egressBytes.WithLabelValues(caller, "up").Add(float64(u.BytesUp))
	g.metrics.egressBytes.WithLabelValues(caller, "down").Add(float64(u.BytesDown))

	rec := audit.Record{Surface: audit.SurfaceEgress, Caller: u.Orchestrator, Outcome: audit.OutcomeOK, Kind: u.Kind, Latency: u.Duration,
		Egress: &audit.Egress{Credential: u.Credential, Method: u.Method, PathPrefix: u.PathPrefix, Status: u.Status,
			BytesUp: u.BytesUp, BytesDown: u.BytesDown}}
	if u.Kind != "" {
		rec.Outcome = audit.OutcomeRefused
	}
	if u.Allowed {
		rec.Egress.Host = u.Host
	} else {
		rec.Target = u.Host
	}
	g.audit.Record(rec)
}

// egressMetrics are the proxy's series: uses by caller, credential and
// result (tunnel, intercept, forward, inject, or the refusal's kind), and
// bytes by caller and direction. Caller and credential are names only
// with gateway.metrics.orchestrator_labels.
func egressMetrics() (*prometheus.CounterVec, *prometheus.CounterVec) {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "garra_egress_requests_total",
			Help: "Requests and tunnels through the egress proxy, by caller, credential (a name with gateway.metrics.orchestrator_labels, else credential or none) and result (tunnel, forward, inject, or the refusal's kind).",
		}, []string{"caller", "credential", "result"}),
		prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "garra_egress_bytes_total",
			Help: "Body bytes through the egress proxy, by caller and direction (up: to the upstream, down: back to the sandbox).",
		}, []string{"caller", "direction"})
}

// listenEgress opens gateway.egress.listen, or returns nil when it is unset.
func listenEgress(cfg *config.Config) (net.Listener, error) {
	addr := cfg.Gateway.Egress.Listen
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("gateway.egress.listen %s: %w", addr, err)
	}
	return ln, nil
}
