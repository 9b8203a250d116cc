package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// GatewayAuth is the gateway side of the identity modes.
type GatewayAuth struct {
	// Audience is this gateway's resource identifier: ServiceAccount
	// tokens must be issued for it, and the protected resource metadata
	// (RFC 9728) names it. The operator sets it to the endpoint URL.
	Audience string `json:"audience,omitempty"`
	// ReviewCacheSeconds bounds how long a TokenReview verdict is reused
	// (0 = DefaultReviewCacheSeconds): a deleted ServiceAccount's token
	// keeps working at most this long.
	ReviewCacheSeconds int `json:"review_cache_seconds,omitempty"`
	// Kubeconfig points an off-cluster gateway at the API server that
	// reviews ServiceAccount tokens; in a pod the in-cluster config is used.
	Kubeconfig string `json:"kubeconfig,omitempty"`
}

// Bounds of gateway.auth.review_cache_seconds.
const (
	DefaultReviewCacheSeconds = 10
	MaxReviewCacheSeconds     = 300
)

// OrchestratorAuth is one orchestrator's mode: at most one field set.
type OrchestratorAuth struct {
	ServiceAccount *ServiceAccountAuth `json:"service_account,omitempty"`
	OIDC           *OIDCAuth           `json:"oidc,omitempty"`
}

// ServiceAccountAuth admits the projected tokens of one ServiceAccount.
type ServiceAccountAuth struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// OIDCAuth admits JWTs of Issuer for Audience whose sub is Subject (when
// set) and that carry every one of Claims.
type OIDCAuth struct {
	Issuer   string            `json:"issuer"`
	Audience string            `json:"audience"`
	Subject  string            `json:"subject,omitempty"`
	Claims   map[string]string `json:"claims,omitempty"`
}

// The authentication modes (the names the CRD and the metrics use).
const (
	AuthToken          = "token"
	AuthServiceAccount = "serviceAccount"
	AuthOIDC           = "oidc"
)

// ServiceAccountUsername is the user the API server reports for the
// tokens of the ServiceAccount namespace/name.
func ServiceAccountUsername(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// AuthMode is the orchestrator's mode.
func (o Orchestrator) AuthMode() string {
	switch {
	case o.Auth == nil:
		return AuthToken
	case o.Auth.ServiceAccount != nil:
		return AuthServiceAccount
	case o.Auth.OIDC != nil:
		return AuthOIDC
	}
	return AuthToken
}

// IdentityKey is what two entries must not share: the identity a token
// proves, in a canonical form.
func (o Orchestrator) IdentityKey() string {
	switch o.AuthMode() {
	case AuthServiceAccount:
		return "serviceAccount " + o.Auth.ServiceAccount.Namespace + "/" + o.Auth.ServiceAccount.Name
	case AuthOIDC:
		a := o.Auth.OIDC
		var claims []string
		for _, k := range slices.Sorted(maps.Keys(a.Claims)) {
			claims = append(claims, k+"="+a.Claims[k])
		}
		return "oidc " + strings.TrimSuffix(a.Issuer, "/") + " aud=" + a.Audience + " sub=" + a.Subject + " " + strings.Join(claims, ",")
	}
	return ""
}

// checkAuth lists the problems of the identity modes: each entry's, and
// two entries that claim the same identity (the second is named).
func (c *Config) checkAuth(getenv func(string) string, readFile func(string) (string, error)) []Problem {
	var ps []Problem
	add := func(field, format string, a ...any) {
		ps = append(ps, Problem{Field: field, Message: fmt.Sprintf(format, a...)})
	}
	ga := c.Gateway.Auth
	if ga.ReviewCacheSeconds < 0 || ga.ReviewCacheSeconds > MaxReviewCacheSeconds {
		add("gateway.auth.review_cache_seconds", "%d is outside [0, %d]: a long cache keeps a deleted ServiceAccount working", ga.ReviewCacheSeconds, MaxReviewCacheSeconds)
	}
	if ga.Kubeconfig != "" {
		if _, err := readFile(ga.Kubeconfig); err != nil {
			add("gateway.auth.kubeconfig", "%v: no API server to review ServiceAccount tokens", err)
		}
	}
	claimed := map[string]string{}
	for i, o := range c.Gateway.MCPHTTP.Orchestrators {
		field := fmt.Sprintf("gateway.mcp_http.orchestrators[%d]", i)
		if o.Name != "" {
			field = "gateway.mcp_http.orchestrators[" + o.Name + "]"
		}
		if o.Auth == nil {
			continue
		}
		f := field + ".auth"
		switch {
		case o.Auth.ServiceAccount != nil && o.Auth.OIDC != nil:
			add(f, "set one of service_account and oidc, not both")
			continue
		case o.Auth.ServiceAccount == nil && o.Auth.OIDC == nil:
			add(f, "set service_account or oidc (or remove auth for the static token)")
			continue
		}
		if o.KeyEnv != "" || o.KeyFile != "" {
			add(field+".key_env", "a static token is set but auth is %s, which does not accept it: remove key_env/key_file", o.AuthMode())
		}
		if sa := o.Auth.ServiceAccount; sa != nil {
			for _, kv := range [][2]string{{"namespace", sa.Namespace}, {"name", sa.Name}} {
				if !dnsSubdomain().MatchString(kv[1]) {
					add(f+".service_account."+kv[0], "%q is not a Kubernetes name", kv[1])
				}
			}
			if ga.Audience == "" {
				add("gateway.auth.audience", "empty, but orchestrator %q authenticates with a ServiceAccount: set the audience its projected token is issued for (the gateway's endpoint URL)", o.Name)
			}
			if ga.Kubeconfig == "" && getenv("KUBERNETES_SERVICE_HOST") == "" {
				ps = append(ps, Problem{Field: f + ".service_account", FailsClosed: true,
					Message: "the gateway runs off-cluster (KUBERNETES_SERVICE_HOST is unset) and gateway.auth.kubeconfig is empty: no API server can review this orchestrator's tokens, so it is disabled"})
			}
		}
		if a := o.Auth.OIDC; a != nil {
			if err := CheckIssuerURL(a.Issuer); err != nil {
				add(f+".oidc.issuer", "%q %v", a.Issuer, err)
			}
			if strings.TrimSpace(a.Audience) == "" {
				add(f+".oidc.audience", "required: the aud value the issuer puts in this orchestrator's tokens")
			}
			if a.Subject == "" && len(a.Claims) == 0 {
				add(f+".oidc", "set subject or claims: without either, every token the issuer mints for this audience would be this orchestrator")
			}
		}
		key := o.IdentityKey()
		if prev, ok := claimed[key]; ok {
			add(f, "claims the same identity as orchestrator %q (%s): a token would prove both", prev, key)
		} else {
			claimed[key] = o.Name
		}
	}
	return ps
}

// dnsSubdomain is a Kubernetes object name (a ServiceAccount's may have dots).
var dnsSubdomain = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
})

// CheckIssuerURL accepts https, or http to a loopback host (a local issuer in
// development); no query or fragment, which discovery cannot carry.
func CheckIssuerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return fmt.Errorf("is not an absolute URL")
	}
	switch u.Scheme {
	case "https":
	case "http":
		h := u.Hostname()
		if ip := net.ParseIP(h); h != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("uses http: an issuer's keys must come over https (http is accepted only for a loopback issuer)")
		}
	default:
		return fmt.Errorf("has scheme %q: an issuer URL is https", u.Scheme)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("has a query or fragment, which an issuer identifier cannot have")
	}
	return nil
}
