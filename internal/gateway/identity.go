package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/garraia/garra/internal/authn"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/kube"
)

// resourceMetadataPath is where RFC 9728 puts the metadata of the
// resource at /mcp.
const resourceMetadataPath = "/.well-known/oauth-protected-resource/mcp"

// resourceURL is this gateway's resource identifier as the request's
// client knows it: gateway.auth.audience (the operator sets the endpoint
// URL) when the request came by that host, else the URL the request
// reached /mcp by (an ingress, a port-forward; its Host passed the host
// guard). A client checks that the metadata names the URL it called.
func (g *policy) resourceURL(r *http.Request) string {
	if a := g.cfg.Gateway.Auth.Audience; a != "" {
		if u, err := url.Parse(a); err == nil && strings.EqualFold(u.Host, r.Host) {
			return a
		}
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + "/mcp"
}

// resourceMetadataURL is the metadata document's URL for the resource:
// the well-known prefix inserted between its host and its path.
func (g *policy) resourceMetadataURL(r *http.Request) string {
	u, err := url.Parse(g.resourceURL(r))
	if err != nil || u.Host == "" {
		return resourceMetadataPath
	}
	u.Path = "/.well-known/oauth-protected-resource" + u.Path
	u.RawQuery, u.Fragment = "", ""
	return u.String()
}

// resourceMetadataHandler serves the protected resource metadata: this
// resource and the OIDC issuers that mint tokens for it, so that a
// spec-following MCP client learns where to get one.
func (g *policy) resourceMetadataHandler() http.Handler {
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
			Resource:               g.resourceURL(r),
			AuthorizationServers:   g.callers.issuers,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           "Garra gateway",
		}).ServeHTTP(w, r)
	})
	return hostGuard(g.cfg.Gateway.AllowedHosts, g.refusedHTTP, h)
}

// reviewers builds the TokenReview client once per kubeconfig, so that a
// reload does not open a new connection pool.
type reviewers struct {
	given authn.Reviewer
	mu    sync.Mutex
	built map[string]authn.Reviewer
}

func (g *Gateway) callerDeps(cfg *config.Config) callerDeps {
	deps := callerDeps{onReview: g.metrics.reviewed}
	needs := false
	for _, o := range cfg.Gateway.MCPHTTP.Orchestrators {
		needs = needs || o.AuthMode() == config.AuthServiceAccount
	}
	if !needs {
		return deps
	}
	r, err := g.reviewers.get(cfg.Gateway.Auth.Kubeconfig)
	if err != nil {
		g.log.Warn("no API server for ServiceAccount tokens", "error", err.Error(),
			"fix", "run the gateway in a pod, or set gateway.auth.kubeconfig")
		return deps
	}
	deps.reviewer = r
	return deps
}

func (rs *reviewers) get(kubeconfig string) (authn.Reviewer, error) {
	if rs.given != nil {
		return rs.given, nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if r, ok := rs.built[kubeconfig]; ok {
		return r, nil
	}
	rc, err := kube.Config(kubeconfig)
	if err != nil {
		return nil, err
	}
	c, err := kube.New(rc, 0)
	if err != nil {
		return nil, fmt.Errorf("TokenReview client: %w", err)
	}
	if rs.built == nil {
		rs.built = map[string]authn.Reviewer{}
	}
	rs.built[kubeconfig] = c.TokenReviews()
	return rs.built[kubeconfig], nil
}

// countAdmitted counts each authenticated request by caller and mode,
// naming orchestrators only when named.
func countAdmitted(m *metrics, named bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := callerFrom(r.Context()); ok {
			m.admitted(c, named)
		}
		next.ServeHTTP(w, r)
	})
}
