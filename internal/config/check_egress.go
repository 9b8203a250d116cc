package config

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// methodToken is an HTTP method as credentials name it: upper case.
var methodToken = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Z]+$`) })

// forbiddenInjectHeaders are headers a credential must not be injected
// into: the ones that frame the message or belong to one connection (a
// proxy drops or rewrites them), and the Host the request is routed by.
var forbiddenInjectHeaders = map[string]bool{
	"connection": true, "keep-alive": true, "te": true, "trailer": true, "transfer-encoding": true,
	"upgrade": true, "host": true, "content-length": true,
}

// HostPatternValid reports whether p is an egress host: an exact host name
// (or IPv4 address) or "*." followed by one, without port or scheme.
func HostPatternValid(p string) bool {
	name := strings.TrimPrefix(p, "*.")
	return name != "" && len(name) <= 253 && !strings.HasPrefix(name, "*") && hostName().MatchString(name)
}

// headerTokenValid reports whether s is an HTTP field name (RFC 9110 token).
func headerTokenValid(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("!#$%&'*+-.^_`|~", r):
		default:
			return false
		}
	}
	return true
}

// checkEgress checks gateway.egress and every orchestrator's egress and
// credentials. Files are read through readFile (the operator's stand-ins
// say only whether a file is mounted); the CA's content is checked by
// checkEgressCA, on the real files.
func (c *Config) checkEgress(readFile func(string) (string, error)) []Problem {
	var ps []Problem
	add := func(field, format string, a ...any) {
		ps = append(ps, Problem{Field: field, Message: fmt.Sprintf(format, a...)})
	}
	e := c.Gateway.Egress
	if e.Listen != "" {
		if err := listenAddressValid(e.Listen); err != nil {
			add("gateway.egress.listen", "%v", err)
		}
		for _, f := range [...]struct{ field, path string }{
			{"gateway.egress.ca_cert_file", e.CACertFile}, {"gateway.egress.ca_key_file", e.CAKeyFile},
		} {
			if f.path == "" {
				add(f.field, "required with gateway.egress.listen: the proxy signs the certificates of credential hosts with this CA")
			} else if _, err := readFile(f.path); err != nil {
				add(f.field, "%v", err)
			}
		}
	}
	anyCredential := false
	for i, o := range c.Gateway.MCPHTTP.Orchestrators {
		field := fmt.Sprintf("gateway.mcp_http.orchestrators[%d]", i)
		if o.Name != "" {
			field = "gateway.mcp_http.orchestrators[" + o.Name + "]"
		}
		if (o.Egress != nil || len(o.Credentials) > 0) && o.Sandbox == nil {
			f := field + ".credentials"
			if len(o.Credentials) == 0 {
				f = field + ".egress"
			}
			add(f, "needs sandbox: only a sandbox pod reaches the network through the gateway's egress proxy")
		}
		if o.Egress != nil {
			for j, h := range o.Egress.Hosts {
				if !HostPatternValid(h) {
					add(fmt.Sprintf("%s.egress.hosts[%d]", field, j), "%q is not a host name or *.domain (no scheme, port or path)", h)
				}
			}
		}
		names := map[string]bool{}
		for j, cr := range o.Credentials {
			anyCredential = true
			cf := fmt.Sprintf("%s.credentials[%d]", field, j)
			switch {
			case cr.Name == "":
				add(cf+".name", "required")
			case len(cr.Name) > 63 || !dnsLabel().MatchString(cr.Name):
				add(cf+".name", "%q must be a lower-case DNS label", cr.Name)
			case names[cr.Name]:
				add(cf+".name", "duplicate credential %q in this orchestrator", cr.Name)
			}
			names[cr.Name] = true
			if cr.File == "" {
				add(cf+".file", "required: the file holding the credential's value")
			} else if _, err := readFile(cr.File); err != nil {
				ps = append(ps, Problem{Field: cf + ".file", Message: err.Error() + ": this credential is not injected", FailsClosed: true})
			}
			if len(cr.Hosts) == 0 {
				add(cf+".hosts", "required: the hosts the credential is sent to")
			}
			for k, h := range cr.Hosts {
				if !HostPatternValid(h) {
					add(fmt.Sprintf("%s.hosts[%d]", cf, k), "%q is not a host name or *.domain (no scheme, port or path)", h)
				}
			}
			for k, m := range cr.Methods {
				if !methodToken().MatchString(m) {
					add(fmt.Sprintf("%s.methods[%d]", cf, k), "%q is not an upper-case HTTP method (GET, POST, …)", m)
				}
			}
			for k, p := range cr.PathPrefixes {
				if msg := PathPrefixProblem(p); msg != "" {
					add(fmt.Sprintf("%s.path_prefixes[%d]", cf, k), "%q %s", p, msg)
				}
			}
			ps = append(ps, injectProblems(cf+".inject", cr.Inject)...)
		}
	}
	if anyCredential && e.Listen == "" {
		ps = append(ps, Problem{Field: "gateway.egress.listen", Warning: true,
			Message: "orchestrators have credentials but the egress proxy is off: nothing injects them"})
	}
	return ps
}

// PathPrefixProblem says what is wrong with a credential's path prefix,
// or "" (the operator refuses the same in the CRD's pathPrefixes). Dot
// segments are refused: the proxy matches the request's path as sent,
// and a prefix with them would never match a clean path.
func PathPrefixProblem(p string) string {
	switch {
	case !strings.HasPrefix(p, "/"):
		return "must start with /"
	case strings.ContainsAny(p, "?#\\") || strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return "must be a path alone: no query, fragment, backslash, space or control character"
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == "." || seg == ".." {
			return "must not hold . or .. segments"
		}
	}
	return ""
}

// injectProblems checks a credential's inject block.
func injectProblems(field string, in CredentialInject) []Problem {
	var ps []Problem
	add := func(f, format string, a ...any) {
		ps = append(ps, Problem{Field: field + f, Message: fmt.Sprintf(format, a...)})
	}
	if h := in.Header; h != "" {
		l := strings.ToLower(h)
		switch {
		case !headerTokenValid(h):
			add(".header", "%q is not an HTTP header name", h)
		case forbiddenInjectHeaders[l] || strings.HasPrefix(l, "proxy-"):
			add(".header", "%q is a connection, framing or proxy header, which a proxy does not pass on", h)
		}
	}
	switch in.Scheme {
	case "", SchemeBearer, SchemeNone:
		if in.Username != "" {
			add(".username", "is used only with scheme basic")
		}
	case SchemeBasic:
		switch {
		case in.Username == "":
			add(".username", "required with scheme basic (e.g. x-access-token for a GitHub token)")
		case strings.ContainsAny(in.Username, ":") || strings.ContainsFunc(in.Username, func(r rune) bool { return r < ' ' || r == 0x7f }):
			add(".username", "must hold no colon or control character")
		}
	default:
		add(".scheme", "%q is not bearer, basic or none", in.Scheme)
	}
	return ps
}

// listenAddressValid checks a host:port to listen on (port 0 picks one).
func listenAddressValid(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port (e.g. :3128): %w", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("%q: port %q is not a number in [0, 65535]", addr, port)
	}
	if host != "" && net.ParseIP(host) == nil && !hostName().MatchString(host) {
		return fmt.Errorf("%q: %q is not an IP address or host name", addr, host)
	}
	return nil
}

// LoadEgressCA reads the CA the egress proxy signs its leaf certificates
// with and checks it as ParseEgressCA does at now; the error names the
// field at fault.
func (e GatewayEgress) LoadEgressCA(now time.Time) (tls.Certificate, error) {
	certPEM, err := readPEMFile(e.CACertFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("gateway.egress.ca_cert_file: %w", err)
	}
	keyPEM, err := readPEMFile(e.CAKeyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("gateway.egress.ca_key_file: %w", err)
	}
	pair, err := ParseEgressCA(certPEM, keyPEM, now)
	var bad *EgressCAError
	if errors.As(err, &bad) {
		field := "gateway.egress.ca_cert_file"
		if bad.Key {
			field = "gateway.egress.ca_key_file"
		}
		return tls.Certificate{}, fmt.Errorf("%s: %s", field, bad.Reason)
	}
	return pair, err
}

// EgressCAError says why a certificate and key are no usable egress CA;
// Key is set when the key (or the pair as a whole) is at fault rather
// than the certificate. Its text quotes nothing of either.
type EgressCAError struct {
	Key    bool
	Reason string
}

func (e *EgressCAError) Error() string { return e.Reason }

// ParseEgressCA checks that certPEM and keyPEM are a CA certificate and
// its key that may sign certificates at now, and returns the pair with its
// leaf parsed. The gateway asks it of the files it is given and the
// operator of the CA it generated, so the two agree on what works; the
// error is an *EgressCAError.
func ParseEgressCA(certPEM, keyPEM []byte, now time.Time) (tls.Certificate, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, &EgressCAError{Key: true, Reason: "not the key of the CA certificate, or not PEM (" + tlsErrorWord(err) + ")"}
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return tls.Certificate{}, &EgressCAError{Reason: "the certificate does not parse (" + tlsErrorWord(err) + ")"}
	}
	switch {
	case !leaf.BasicConstraintsValid || !leaf.IsCA:
		return tls.Certificate{}, &EgressCAError{Reason: "not a CA certificate (basic constraints CA:TRUE)"}
	case leaf.KeyUsage != 0 && leaf.KeyUsage&x509.KeyUsageCertSign == 0:
		return tls.Certificate{}, &EgressCAError{Reason: "the CA may not sign certificates (key usage lacks certSign)"}
	case now.Before(leaf.NotBefore):
		return tls.Certificate{}, &EgressCAError{Reason: "the CA is not valid before " + leaf.NotBefore.UTC().Format(time.RFC3339)}
	case !now.Before(leaf.NotAfter):
		return tls.Certificate{}, &EgressCAError{Reason: "the CA expired at " + leaf.NotAfter.UTC().Format(time.RFC3339)}
	}
	pair.Leaf = leaf
	return pair, nil
}

// maxPEMFileBytes bounds a CA file: a certificate or key is a few KiB.
const maxPEMFileBytes = 64 << 10

// readPEMFile reads a PEM file with the non-blocking, regular-file checks
// of the secret readers.
func readPEMFile(path string) ([]byte, error) {
	if path == "" {
		return nil, errors.New("not set")
	}
	return readSecretBytesMax(path, maxPEMFileBytes)
}

// tlsErrorWord keeps crypto/tls's reason without any input it quotes.
func tlsErrorWord(err error) string {
	s := err.Error()
	if i := strings.IndexByte(s, ':'); i > 0 && i < 80 {
		return s[:i]
	}
	if len(s) > 80 {
		return s[:80]
	}
	return s
}

// checkEgressCA checks, on the real files, that the CA is a valid pair
// (Check only: the operator's stand-in files hold no PEM).
func (c *Config) checkEgressCA() []Problem {
	e := c.Gateway.Egress
	if e.Listen == "" || e.CACertFile == "" || e.CAKeyFile == "" {
		return nil
	}
	if _, err := readPEMFile(e.CACertFile); err != nil {
		return nil // CheckWith named it
	}
	if _, err := readPEMFile(e.CAKeyFile); err != nil {
		return nil
	}
	if _, err := e.LoadEgressCA(time.Now()); err != nil {
		field, msg, _ := strings.Cut(err.Error(), ": ")
		return []Problem{{Field: field, Message: msg}}
	}
	return nil
}
