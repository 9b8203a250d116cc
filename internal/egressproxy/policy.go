// Package egressproxy is the gateway's egress proxy: the one way out of a
// sandbox whose orchestrator has `egress: gateway`. It is an HTTP forward
// proxy (CONNECT host:port and absolute-form http:// requests) that
//
//   - knows the calling sandbox by its egress token (config.EgressToken of
//     the sandbox token the gateway already holds for it), sent as
//     Proxy-Authorization: Basic garra:TOKEN;
//   - lets it reach only the hosts its orchestrator allows (egress.hosts
//     and the hosts of its credentials, exact or *.domain);
//   - for a host one of its credentials names, terminates TLS with a
//     certificate for that host signed by the gateway's CA (which the
//     sandbox trusts), puts the credential's header into the requests it
//     matches (host, method, path prefix), and connects upward with full
//     TLS verification; every other allowed host is tunnelled untouched;
//   - connects upward only through the gateway's egress guard (no
//     loopback, private or link-local destination unless allowlisted);
//   - replaces the orchestrator's credential values (and their encoded
//     forms) in what an intercepted upstream answers, streaming, so an
//     upstream that echoes a header never shows the value to the sandbox.
//
// What to decide is a pure function of the policy (Rules.Connect,
// Rules.Request); the Proxy carries it out. The Policy is immutable and
// rebuilt on each config reload, so a rotated, added or revoked
// credential applies to the next request.
package egressproxy

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/garraia/garra/internal/config"
)

// Policy is what the proxy enforces for one configuration: every
// orchestrator's rules, found by the digest of its egress token, and the
// CA that signs the certificates of intercepted hosts.
type Policy struct {
	byToken map[[sha256.Size]byte]tokenEntry
	signer  *Signer // nil: no CA, so nothing can be intercepted
}

// tokenEntry is an admitted egress token: its digest (kept to compare
// again in constant time) and whose it is.
type tokenEntry struct {
	digest [sha256.Size]byte
	rules  *Rules
}

// Rules are one orchestrator's: what its sandbox may reach and which
// credentials go where.
type Rules struct {
	Orchestrator string
	// Hosts are the egress.hosts patterns (lower case, no trailing dot).
	Hosts       []string
	Credentials []*Credential
	// redact replaces every credential value of this orchestrator.
	redact *replacer
}

// Credential is one credential as the proxy injects it.
type Credential struct {
	Name         string
	Hosts        []string // lower case, no trailing dot
	Methods      []string
	PathPrefixes []string
	// Header is the canonical header name the value goes into.
	Header string
	// value is the header's value ("Bearer …"); "" when the file could
	// not be read, which refuses the requests it matches.
	value string
}

// Available reports whether the credential's value could be read.
func (c *Credential) Available() bool { return c.value != "" }

// Build makes the policy of cfg: every orchestrator with a sandbox gets
// rules (one without egress settings may reach nothing, which the proxy
// says with a refusal naming the rule rather than a 407). A credential
// whose file cannot be read is kept, unavailable: the requests it matches
// are refused, never sent without it. prev, when its CA is the same,
// lends its certificate cache. The errors name fields, never values. The
// sandbox token and credential files are read by read (nil: the disk), as
// the rest of the gateway's policy reads them.
func Build(cfg *config.Config, getenv func(string) string, read config.SecretReader, prev *Policy) (*Policy, []error) {
	p := &Policy{byToken: map[[sha256.Size]byte]tokenEntry{}}
	var errs []error
	if e := cfg.Gateway.Egress; e.Listen != "" {
		ca, err := e.LoadEgressCA(time.Now())
		if err != nil {
			errs = append(errs, err)
		} else {
			var old *Signer
			if prev != nil {
				old = prev.signer
			}
			p.signer = reuseSigner(old, ca)
		}
	}
	ambiguous := map[[sha256.Size]byte]bool{}
	for _, o := range cfg.Gateway.MCPHTTP.Orchestrators {
		if o.Sandbox == nil || o.Name == "" {
			continue
		}
		field := fmt.Sprintf("gateway.mcp_http.orchestrators[%s]", o.Name)
		tokens, err := o.Sandbox.TokensWith(getenv, read)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s.sandbox: %w: its sandbox cannot use the egress proxy", field, err))
			continue
		}
		r := buildRules(o, field, read, &errs)
		for _, t := range tokens {
			d := sha256.Sum256([]byte(config.EgressToken(t)))
			if prev, ok := p.byToken[d]; ok && prev.rules != r {
				// Two orchestrators with one sandbox token could not be
				// told apart: neither is admitted by it.
				ambiguous[d] = true
				errs = append(errs, fmt.Errorf("%s.sandbox: shares its token with orchestrator %q: neither is admitted by it", field, prev.rules.Orchestrator))
			}
			p.byToken[d] = tokenEntry{digest: d, rules: r}
		}
	}
	for d := range ambiguous {
		delete(p.byToken, d)
	}
	return p, errs
}

func buildRules(o config.Orchestrator, field string, read config.SecretReader, errs *[]error) *Rules {
	r := &Rules{Orchestrator: o.Name}
	if o.Egress != nil {
		r.Hosts = normPatterns(o.Egress.Hosts)
	}
	var secrets []string
	for j, c := range o.Credentials {
		cr := &Credential{
			Name: c.Name, Hosts: normPatterns(c.Hosts), Methods: slices.Clone(c.Methods),
			PathPrefixes: slices.Clone(c.PathPrefixes), Header: http.CanonicalHeaderKey(c.Inject.Header),
		}
		if cr.Header == "" {
			cr.Header = "Authorization"
		}
		v, err := c.ValueWith(read)
		if err == nil && strings.ContainsFunc(v, func(r rune) bool { return r < ' ' || r == 0x7f }) {
			// A header cannot carry it; the error names no byte of it.
			err = errors.New("file: the value holds a control character (a line break inside it?)")
		}
		if err != nil {
			*errs = append(*errs, fmt.Errorf("%s.credentials[%d].%w: requests it matches are refused", field, j, err))
		} else {
			cr.value = headerValue(c.Inject, v)
			secrets = append(secrets, secretForms(c.Inject, v, cr.value)...)
		}
		r.Credentials = append(r.Credentials, cr)
	}
	r.redact = newReplacer(secrets)
	return r
}

// headerValue is what the credential's header carries.
func headerValue(in config.CredentialInject, v string) string {
	switch in.Scheme {
	case config.SchemeBasic:
		return "Basic " + base64.StdEncoding.EncodeToString([]byte(in.Username+":"+v))
	case config.SchemeNone:
		return v
	}
	return "Bearer " + v
}

// secretForms are the strings an upstream could echo the credential as:
// the value, the header value, and their base64 and URL encodings.
func secretForms(in config.CredentialInject, v, header string) []string {
	forms := []string{v, header, url.QueryEscape(v)}
	raw := []string{v}
	if in.Scheme == config.SchemeBasic {
		raw = append(raw, in.Username+":"+v)
	}
	for _, s := range raw {
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
			forms = append(forms, enc.EncodeToString([]byte(s)))
		}
	}
	return forms
}

func normPatterns(ps []string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, normHost(p))
	}
	return out
}

func normHost(h string) string { return strings.TrimSuffix(strings.ToLower(h), ".") }

// errNoAuth is a request without a usable Proxy-Authorization.
var errNoAuth = errors.New("no egress credentials")

// Authenticate finds the rules of the sandbox whose egress token the
// Proxy-Authorization header value carries (Basic garra:TOKEN). The
// lookup is by the token's SHA-256 digest, so its time depends on no
// prefix of the token, and the digest found is compared again in
// constant time.
func (p *Policy) Authenticate(proxyAuth string) (*Rules, error) {
	if p == nil {
		return nil, errNoAuth
	}
	enc, ok := strings.CutPrefix(proxyAuth, "Basic ")
	if !ok {
		return nil, errNoAuth
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(enc))
	if err != nil {
		return nil, errNoAuth
	}
	user, token, ok := strings.Cut(string(raw), ":")
	if !ok || user != config.EgressProxyUser {
		return nil, errNoAuth
	}
	d := sha256.Sum256([]byte(token))
	e, found := p.byToken[d]
	if !found || subtle.ConstantTimeCompare(e.digest[:], d[:]) != 1 {
		return nil, errNoAuth
	}
	return e.rules, nil
}

// Orchestrators is how many orchestrators' sandboxes the policy admits.
func (p *Policy) Orchestrators() int {
	seen := map[*Rules]bool{}
	for _, e := range p.byToken {
		seen[e.rules] = true
	}
	return len(seen)
}
