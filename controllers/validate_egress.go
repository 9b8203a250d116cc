package controllers

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/config"
)

// egressProblem is the first problem of m's egress hosts and credentials,
// or "". The CRD's schema says much of it too; this holds without it and
// says what the schema cannot: that hosts and credentials belong to egress
// through the gateway, which is the only way out that can check a name
// and add a header.
func egressProblem(m member) string {
	sb := m.Field + ".sandbox"
	if !egressGateway(m) {
		mode := m.Sandbox.Egress
		if mode == "" {
			mode = garrav1alpha1.EgressNone
		}
		switch {
		case len(m.Sandbox.EgressHosts) > 0:
			return fmt.Sprintf("%s.egressHosts is used only with %s.egress: gateway (it is %s): set egress to gateway, or remove egressHosts", sb, sb, mode)
		case len(m.Credentials) > 0:
			return fmt.Sprintf("%s.credentials need %s.egress: gateway (it is %s): the gateway adds a credential on the sandbox's way out, which only that mode takes", m.Field, sb, mode)
		}
		return ""
	}
	for i, h := range m.Sandbox.EgressHosts {
		if p := egressHostProblem(sb+".egressHosts["+strconv.Itoa(i)+"]", h); p != "" {
			return p
		}
	}
	seen := map[string]int{}
	for i, c := range m.Credentials {
		field := m.credentialField(i)
		if j, dup := seen[c.Name]; dup {
			return fmt.Sprintf("%s.name: %q is also the name of %s: each credential of an orchestrator needs its own name", field, c.Name, m.credentialField(j))
		}
		seen[c.Name] = i
		if p := credentialProblem(field, c); p != "" {
			return p
		}
	}
	return ""
}

// credentialProblem is the first problem of one credential, or "".
func credentialProblem(field string, c garrav1alpha1.CredentialSpec) string {
	if errs := validation.IsDNS1123Label(c.Name); len(errs) > 0 {
		return fmt.Sprintf("%s.name: %q is not a lower-case DNS label: %s", field, c.Name, strings.Join(errs, "; "))
	}
	if c.SecretRef.Name == "" || c.SecretRef.Key == "" {
		return field + ".secretRef needs a name and a key: the Secret, in the orchestrator's own namespace, and its key holding the value"
	}
	if len(c.Hosts) == 0 {
		return field + ".hosts is empty: name the hosts the credential is sent to"
	}
	for i, h := range c.Hosts {
		if p := egressHostProblem(field+".hosts["+strconv.Itoa(i)+"]", h); p != "" {
			return p
		}
	}
	for i, meth := range c.Methods {
		if !slices.Contains(httpMethods, meth) {
			return fmt.Sprintf("%s.methods[%d]: %q is not one of %s", field, i, meth, strings.Join(httpMethods, ", "))
		}
	}
	for i, p := range c.PathPrefixes {
		if msg := config.PathPrefixProblem(p); msg != "" {
			return fmt.Sprintf("%s.pathPrefixes[%d]: %q %s", field, i, p, msg)
		}
	}
	return injectProblem(field+".inject", c.Inject)
}

// httpMethods are the methods a credential may be limited to.
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"}

// reservedHeaders are those a credential may not be sent in: they frame
// the request or belong to one connection, which a proxy drops or
// rewrites; so does every Proxy- header.
var reservedHeaders = []string{"host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer"}

func injectProblem(field string, in garrav1alpha1.CredentialInject) string {
	if in.Header != "" {
		if strings.IndexFunc(in.Header, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
			return fmt.Sprintf("%s.header: %q is not an HTTP header name", field, in.Header)
		}
		if l := strings.ToLower(in.Header); slices.Contains(reservedHeaders, l) || strings.HasPrefix(l, "proxy-") {
			return fmt.Sprintf("%s.header: %s frames the request or speaks to the proxy: a credential cannot be sent in it", field, in.Header)
		}
	}
	switch in.Scheme {
	case "", garrav1alpha1.CredentialBearer, garrav1alpha1.CredentialNone:
		if in.Username != "" {
			return fmt.Sprintf("%s.username is used only with scheme Basic (it is %s)", field, schemeOrDefault(in.Scheme))
		}
	case garrav1alpha1.CredentialBasic:
		if in.Username == "" {
			return field + ".username is required with scheme Basic (x-access-token for a GitHub token)"
		}
		if strings.Contains(in.Username, ":") || strings.ContainsFunc(in.Username, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			return field + ".username may not contain ':' or a control character (Basic sends USERNAME:VALUE)"
		}
	default:
		return fmt.Sprintf("%s.scheme: %q is not Bearer, Basic or None", field, in.Scheme)
	}
	return ""
}

func schemeOrDefault(s garrav1alpha1.CredentialScheme) garrav1alpha1.CredentialScheme {
	if s == "" {
		return garrav1alpha1.CredentialBearer
	}
	return s
}

// isTokenChar is RFC 9110's tchar.
func isTokenChar(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}

// egressHostProblem checks one host rule: a lower-case DNS name, or "*."
// and one (every name below it, not the name itself). Not an address: the
// gateway's rules are names, which is what a NetworkPolicy cannot say.
func egressHostProblem(field, h string) string {
	name, wildcard := strings.CutPrefix(h, "*.")
	switch {
	case net.ParseIP(strings.Trim(h, "[]")) != nil:
		return fmt.Sprintf("%s: %q is an IP address: egress rules name hosts (exact, or a leading \"*.\" wildcard)", field, h)
	case strings.Contains(name, "*"):
		return fmt.Sprintf("%s: %q: the only wildcard is a leading \"*.\" (*.example.com)", field, h)
	case strings.Contains(h, ":") || strings.Contains(h, "/"):
		return fmt.Sprintf("%s: %q is not a host name: no scheme, port or path (example.com, *.example.com)", field, h)
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		what := "a host name"
		if wildcard {
			what = "a wildcard's domain"
		}
		return fmt.Sprintf("%s: %q is not %s in lower case: %s", field, h, what, strings.Join(errs, "; "))
	}
	return ""
}
