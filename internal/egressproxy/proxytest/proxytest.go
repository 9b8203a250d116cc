// Package proxytest runs the egress proxy on loopback for tests, with a
// policy rebuilt from a config on demand (as a gateway reload does) and
// every use recorded.
package proxytest

import (
	"context"
	"crypto/x509"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/egressproxy"
	"github.com/garraia/garra/internal/tools"
)

// Options of Start.
type Options struct {
	// Config holds gateway.egress and the orchestrators.
	Config *config.Config
	Getenv func(string) string
	// AllowedHosts are the guard's allowlist (the gateway's
	// web_fetch_allowed_hosts): loopback upstreams need theirs.
	AllowedHosts []string
	// RootCAs verify the upstreams (their test certificates).
	RootCAs *x509.CertPool
	// TracerProvider receives the proxy's spans; nil is none.
	TracerProvider trace.TracerProvider
}

// Proxy is a running egress proxy.
type Proxy struct {
	Addr string
	o    Options
	pol  atomic.Pointer[egressproxy.Policy]

	mu   sync.Mutex
	uses []egressproxy.Use
}

// Start runs a proxy until the test ends.
func Start(t testing.TB, o Options) *Proxy {
	t.Helper()
	if o.Getenv == nil {
		o.Getenv = func(string) string { return "" }
	}
	p := &Proxy{o: o}
	p.Reload(t)
	guard := tools.NewEgressGuard(o.AllowedHosts)
	px := egressproxy.New(egressproxy.Options{
		Policy: p.pol.Load, Dial: guard.DialContext, RootCAs: o.RootCAs, TracerProvider: o.TracerProvider,
		Observe: func(u egressproxy.Use) {
			p.mu.Lock()
			p.uses = append(p.uses, u)
			p.mu.Unlock()
		},
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.Addr = ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = px.Serve(ctx, ln)
	}()
	t.Cleanup(func() { cancel(); <-done })
	return p
}

// Reload rebuilds the policy from the config (and the files it names).
func (p *Proxy) Reload(t testing.TB) {
	t.Helper()
	pol, errs := egressproxy.Build(p.o.Config, p.o.Getenv, nil, p.pol.Load())
	for _, err := range errs {
		t.Logf("policy: %v", err)
	}
	p.pol.Store(pol)
}

// URL is the proxy's URL with the egress token of sandboxToken, as the
// sandbox puts it in HTTPS_PROXY.
func (p *Proxy) URL(sandboxToken string) *url.URL {
	return &url.URL{Scheme: "http", Host: p.Addr, User: url.UserPassword(config.EgressProxyUser, config.EgressToken(sandboxToken))}
}

// Uses are the uses recorded so far.
func (p *Proxy) Uses() []egressproxy.Use {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]egressproxy.Use(nil), p.uses...)
}
