package egressproxy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/garraia/garra/internal/errkinds"
)

// Action is what the proxy does with a CONNECT or a request.
type Action int

// Actions.
const (
	// Refuse answers with Decision.Kind and sends nothing upward.
	Refuse Action = iota
	// Tunnel relays a CONNECT's bytes both ways without looking at them.
	Tunnel
	// Intercept terminates a CONNECT's TLS with a certificate of the
	// gateway's CA, to decide each request inside it.
	Intercept
	// Forward sends the request upward unchanged.
	Forward
	// Inject sends it upward with Decision.Credential's header.
	Inject
)

func (a Action) String() string {
	switch a {
	case Tunnel:
		return "tunnel"
	case Intercept:
		return "intercept"
	case Forward:
		return "forward"
	case Inject:
		return "inject"
	}
	return "refuse"
}

// Decision is the verdict on one CONNECT or request: the action, and for a
// refusal its kind and the rule that refused (a sentence that names the
// host and the setting, never a credential's value).
type Decision struct {
	Action     Action
	Kind       errkinds.Kind
	Rule       string
	Credential *Credential
	// PathPrefix is the credential's prefix that matched ("" when it has
	// none), for the audit line.
	PathPrefix string
}

// hostMatches reports whether host (lower case, no trailing dot) matches
// pattern: equal, or below the domain of a "*." pattern (at any depth,
// never the domain itself).
func hostMatches(pattern, host string) bool {
	if suffix, ok := strings.CutPrefix(pattern, "*."); ok {
		return len(host) > len(suffix)+1 && strings.HasSuffix(host, "."+suffix)
	}
	return host == pattern
}

func anyHostMatches(patterns []string, host string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return hostMatches(p, host) })
}

// allowed reports whether r lets its sandbox reach host at all.
func (r *Rules) allowed(host string) bool {
	if anyHostMatches(r.Hosts, host) {
		return true
	}
	return slices.ContainsFunc(r.Credentials, func(c *Credential) bool { return anyHostMatches(c.Hosts, host) })
}

func (r *Rules) notAllowed(host string) Decision {
	return Decision{Action: Refuse, Kind: errkinds.EgressHostNotAllowed,
		Rule: fmt.Sprintf("%s is in neither egress.hosts nor the hosts of a credential of orchestrator %s", host, r.Orchestrator)}
}

// Connect decides a CONNECT to host (any port): refused outside the
// allowlist, intercepted when a credential names the host (whatever its
// methods and paths: they are known only once the request is read),
// tunnelled otherwise. canIntercept is false when the proxy has no CA;
// a credential host is then refused rather than tunnelled, so that the
// sandbox learns the credential is not being sent.
func (r *Rules) Connect(host string, canIntercept bool) Decision {
	host = normHost(host)
	if !r.allowed(host) {
		return r.notAllowed(host)
	}
	if slices.ContainsFunc(r.Credentials, func(c *Credential) bool { return anyHostMatches(c.Hosts, host) }) {
		if !canIntercept {
			return Decision{Action: Refuse, Kind: errkinds.EgressCredentialUnavailable,
				Rule: "the egress proxy has no usable CA (gateway.egress.ca_cert_file), so it cannot inject credentials for " + host}
		}
		return Decision{Action: Intercept}
	}
	return Decision{Action: Tunnel}
}

// Request decides one request to host: plain says it arrived as an
// absolute http:// URL rather than inside an intercepted TLS session;
// path is its escaped path as sent. The first credential (in config
// order) whose hosts, methods and path prefixes all match is injected;
// without one the request is forwarded as it is. A credential is never
// sent over plain http, and one whose value cannot be read refuses the
// request rather than letting it go without.
func (r *Rules) Request(plain bool, host, method, path string) Decision {
	host = normHost(host)
	if !r.allowed(host) {
		return r.notAllowed(host)
	}
	clean := pathIsClean(path)
	for _, c := range r.Credentials {
		prefix, ok := c.matches(host, method, path, clean)
		if !ok {
			continue
		}
		switch {
		case plain:
			return Decision{Action: Refuse, Kind: errkinds.EgressPlaintext, Credential: c, PathPrefix: prefix,
				Rule: fmt.Sprintf("credential %s matches http://%s and is sent over https only", c.Name, host)}
		case !c.Available():
			return Decision{Action: Refuse, Kind: errkinds.EgressCredentialUnavailable, Credential: c, PathPrefix: prefix,
				Rule: fmt.Sprintf("credential %s matches but its file cannot be read (revoked or not mounted)", c.Name)}
		}
		return Decision{Action: Inject, Credential: c, PathPrefix: prefix}
	}
	return Decision{Action: Forward}
}

// matches reports whether c applies to the request, and the path prefix
// that matched. A credential limited to path prefixes never matches a
// path with dot segments or encoded separators: the upstream would read
// such a path as another one than the prefix compared.
func (c *Credential) matches(host, method, path string, clean bool) (string, bool) {
	if !anyHostMatches(c.Hosts, host) {
		return "", false
	}
	if len(c.Methods) > 0 && !slices.Contains(c.Methods, method) {
		return "", false
	}
	if len(c.PathPrefixes) == 0 {
		return "", true
	}
	if !clean {
		return "", false
	}
	for _, p := range c.PathPrefixes {
		if strings.HasPrefix(path, p) {
			return p, true
		}
	}
	return "", false
}

// pathIsClean reports whether an escaped path means what it says: it
// starts with "/", has no empty, "." or ".." segment, and no escaped
// "/", "\", "." or "%" that a server might decode into one.
func pathIsClean(p string) bool {
	if !strings.HasPrefix(p, "/") || strings.ContainsRune(p, '\\') {
		return false
	}
	lower := strings.ToLower(p)
	for _, esc := range []string{"%2f", "%5c", "%2e", "%25"} {
		if strings.Contains(lower, esc) {
			return false
		}
	}
	segs := strings.Split(p[1:], "/")
	for i, s := range segs {
		if s == "." || s == ".." || (s == "" && i != len(segs)-1) {
			return false
		}
	}
	return true
}
