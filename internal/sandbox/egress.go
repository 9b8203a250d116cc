package sandbox

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/garraia/garra/internal/config"
)

// Environment variables of `garra sandbox` for `egress: gateway`: the
// gateway's egress proxy and the PEM of the CA it signs intercepted
// hosts' certificates with.
const (
	EgressProxyEnv  = "GARRA_EGRESS_PROXY"
	EgressCAFileEnv = "GARRA_EGRESS_CA_FILE"
)

// ErrEgress is a proxy URL or CA file the sandbox cannot use.
var ErrEgress = errors.New("unusable egress settings")

// systemBundles are where images keep their trusted roots, first found
// wins: Debian/Ubuntu/Alpine, Fedora/RHEL, and the BSD/macOS-style path
// some minimal images use.
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt",
	"/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/cert.pem",
}

// noProxy are the destinations bash reaches without the proxy: its own
// pod's loopback.
const noProxy = "localhost,127.0.0.1,::1"

// egress is what bash needs to go out through the gateway: the proxy
// (whose user info is derived from the sandbox token in force) and the
// trust files the sandbox wrote at start.
type egress struct {
	proxy  *url.URL // without user info
	dir    string   // the private directory of the two files below
	bundle string   // the image's roots + the gateway's CA
	caOnly string   // the gateway's CA alone (NODE_EXTRA_CA_CERTS)
	roots  *x509.CertPool
	// env is bash's proxy and trust variables for the token in force;
	// rebuilt when the token file changes.
	env atomic.Pointer[[]string]
}

// newEgress checks the proxy URL and the CA, and writes the trust bundle
// into a directory of its own. systemRoots are the candidate paths of
// the image's bundle (systemBundles outside tests).
func newEgress(proxyURL, caFile string, systemRoots []string) (*egress, error) {
	u, err := url.Parse(proxyURL)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return nil, fmt.Errorf("%w: %s must be http://HOST:PORT (no user info or path)", ErrEgress, EgressProxyEnv)
	}
	if _, _, err := net.SplitHostPort(u.Host); err != nil {
		return nil, fmt.Errorf("%w: %s must name a port (http://HOST:3128)", ErrEgress, EgressProxyEnv)
	}
	u.Path = ""
	if caFile == "" {
		return nil, fmt.Errorf("%w: %s is set without %s: bash could not trust the gateway's certificates", ErrEgress, EgressProxyEnv, EgressCAFileEnv)
	}
	ca, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrEgress, EgressCAFileEnv, err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		return nil, fmt.Errorf("%w: %s holds no PEM certificate", ErrEgress, EgressCAFileEnv)
	}
	var system []byte
	for _, p := range systemRoots {
		if b, err := os.ReadFile(p); err == nil && len(b) > 0 {
			system = b
			break
		}
	}
	if sys, err := x509.SystemCertPool(); err == nil {
		// Go's own view of the image's roots, for web_fetch; the CA on top.
		sys.AppendCertsFromPEM(ca)
		roots = sys
	}
	dir, err := os.MkdirTemp("", "garra-egress-")
	if err != nil {
		return nil, fmt.Errorf("%w: trust bundle directory: %w", ErrEgress, err)
	}
	e := &egress{proxy: u, dir: dir, bundle: filepath.Join(dir, "ca-bundle.crt"), caOnly: filepath.Join(dir, "egress-ca.crt"), roots: roots}
	bundle := slices.Concat(system, []byte("\n"), ca, []byte("\n"))
	for path, data := range map[string][]byte{e.bundle: bundle, e.caOnly: ca} {
		if err := os.WriteFile(path, data, 0o444); err != nil { //nolint:gosec // G306: public certificates, read by whatever bash runs
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("%w: write %s: %w", ErrEgress, filepath.Base(path), err)
		}
	}
	return e, nil
}

// setToken makes bash's variables for sandboxToken: the proxy URL with
// garra:EGRESS_TOKEN, never the sandbox token itself.
func (e *egress) setToken(sandboxToken string) {
	u := *e.proxy
	u.User = url.UserPassword(config.EgressProxyUser, config.EgressToken(sandboxToken))
	p := u.String()
	env := []string{
		"HTTPS_PROXY=" + p, "HTTP_PROXY=" + p, "https_proxy=" + p, "http_proxy=" + p,
		"NO_PROXY=" + noProxy, "no_proxy=" + noProxy,
		"SSL_CERT_FILE=" + e.bundle, "GIT_SSL_CAINFO=" + e.bundle, "CURL_CA_BUNDLE=" + e.bundle, "REQUESTS_CA_BUNDLE=" + e.bundle,
		"NODE_EXTRA_CA_CERTS=" + e.caOnly,
	}
	e.env.Store(&env)
}

// Env is bash's egress variables (nil before setToken).
func (e *egress) Env() []string {
	if p := e.env.Load(); p != nil {
		return *p
	}
	return nil
}

// proxyFor is web_fetch's proxy: the gateway's, with the current token,
// except for the pod's own loopback.
func (e *egress) proxyFor(r *http.Request) (*url.URL, error) {
	switch r.URL.Hostname() {
	case "localhost", "127.0.0.1", "::1":
		return nil, nil
	}
	for _, kv := range e.Env() {
		if v, ok := strings.CutPrefix(kv, "HTTPS_PROXY="); ok {
			return url.Parse(v)
		}
	}
	return nil, errors.New("egress proxy token not loaded")
}

// httpClient is web_fetch's client: through the proxy, trusting the
// image's roots and the gateway's CA.
func (e *egress) httpClient() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		Proxy:               e.proxyFor,
		TLSClientConfig:     &tls.Config{RootCAs: e.roots, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:   true,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
	}}
}

func (e *egress) close() {
	if e != nil {
		_ = os.RemoveAll(e.dir)
	}
}
