package egressproxy_test

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/egressproxy"
	"github.com/garraia/garra/internal/egressproxy/proxytest"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/test/fakes/egressdouble"
)

const (
	alphaToken = "alpha-sandbox-token-0123456789"
	betaToken  = "beta-sandbox-token-9876543210"
	apiSecret  = "api-secret-value-42-abcdef"
)

type fixture struct {
	api      *egressdouble.API
	proxy    *proxytest.Proxy
	caFile   string
	credFile string
	cfg      *config.Config
}

// newFixture runs an HTTPS API that requires apiSecret and a proxy where
// orchestrator alpha holds that credential for 127.0.0.1 and beta may
// reach 127.0.0.1 without it.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{api: egressdouble.NewAPI(t, "127.0.0.1", apiSecret)}
	caCert, caKey := egressdouble.WriteCA(t, dir, "egress-ca", true)
	f.caFile = caCert
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	f.credFile = write("cred.alpha.api", apiSecret+"\n")
	f.cfg = &config.Config{Gateway: config.Gateway{
		Egress: config.GatewayEgress{Listen: "127.0.0.1:0", CACertFile: caCert, CAKeyFile: caKey},
		MCPHTTP: config.MCPHTTP{Orchestrators: []config.Orchestrator{
			{Name: "alpha", Sandbox: &config.OrchestratorSandbox{URL: "http://a", TokenFile: write("alpha.token", "new-line-token-00000000\n"+alphaToken+"\n")},
				Credentials: []config.Credential{{Name: "api", File: f.credFile, Hosts: []string{"127.0.0.1"}, PathPrefixes: []string{"/"}}}},
			{Name: "beta", Sandbox: &config.OrchestratorSandbox{URL: "http://b", TokenFile: write("beta.token", betaToken)},
				Egress: &config.OrchestratorEgress{Hosts: []string{"127.0.0.1"}}},
		}},
	}}
	roots := x509.NewCertPool()
	roots.AddCert(f.api.Certificate())
	f.proxy = proxytest.Start(t, proxytest.Options{Config: f.cfg, AllowedHosts: []string{"127.0.0.1"}, RootCAs: roots})
	return f
}

// client is what a sandbox's program does: HTTPS_PROXY with its egress
// token, trusting its image's roots (here the API's own certificate) and
// the gateway's CA.
// A nil proxyURL connects directly.
func (f *fixture) client(t testing.TB, proxyURL *url.URL) *http.Client {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(f.api.Certificate())
	pem, err := os.ReadFile(f.caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(pem)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	if proxyURL != nil {
		tr.Proxy = http.ProxyURL(proxyURL)
	}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func get(t *testing.T, c *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// rawConnect sends a CONNECT by hand, to read the refusal's header.
func rawConnect(t *testing.T, proxyAddr, auth, target string) *http.Response {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	req := "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n"
	if auth != "" {
		req += "Proxy-Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(auth)) + "\r\n"
	}
	if _, err := io.WriteString(c, req+"\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func TestInjectsTheCredential(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, f.proxy.URL(alphaToken))
	resp, body := get(t, c, f.api.URL+"/hello")
	if resp.StatusCode != 200 || body != "ok /hello" {
		t.Fatalf("through the proxy: %d %q", resp.StatusCode, body)
	}
	// The certificate the client verified is the gateway CA's for the host.
	if issuer := resp.TLS.PeerCertificates[0].Issuer.CommonName; issuer != "egress-ca" {
		t.Fatalf("intercepted with a certificate from %q", issuer)
	}
	// The sandbox's other token line (a rotation's overlap) is admitted too.
	if resp, _ := get(t, f.client(t, f.proxy.URL("new-line-token-00000000")), f.api.URL+"/x"); resp.StatusCode != 200 {
		t.Fatalf("second token line: %d", resp.StatusCode)
	}
	// A direct request, bypassing the proxy, has no credential.
	direct := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: c.Transport.(*http.Transport).TLSClientConfig.RootCAs}}}
	if resp, _ := get(t, direct, f.api.URL+"/hello"); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("direct: %d, want 401", resp.StatusCode)
	}
	var injected int
	for _, u := range f.proxy.Uses() {
		if u.Action == egressproxy.Inject {
			injected++
			if u.Orchestrator != "alpha" || u.Credential != "api" || u.Host != "127.0.0.1" || u.Method != "GET" || u.PathPrefix != "/" || u.Status != 200 || u.BytesDown == 0 {
				t.Errorf("use %+v", u)
			}
		}
	}
	if injected != 2 {
		t.Fatalf("uses %+v", f.proxy.Uses())
	}
}

// An upstream that echoes the Authorization header, in its body and in a
// header, shows the sandbox the marker, never the value or its base64.
func TestEchoIsRedacted(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, f.proxy.URL(alphaToken))
	// The client's own Authorization is replaced, not passed on.
	req, _ := http.NewRequest(http.MethodGet, f.api.URL+"/echo", nil)
	req.Header.Set("Authorization", "Bearer forged")
	// Nor does another Host header reach another virtual host.
	req.Host = "other.example"
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	body := string(b)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	all := body + resp.Header.Get("X-Echo-Authorization")
	for _, form := range []string{apiSecret, base64.StdEncoding.EncodeToString([]byte(apiSecret))} {
		if strings.Contains(all, form) {
			t.Fatalf("the credential reached the sandbox: %s", all)
		}
	}
	if !strings.Contains(body, egressproxy.Marker) || resp.Header.Get("X-Echo-Authorization") != "Bearer "+egressproxy.Marker && resp.Header.Get("X-Echo-Authorization") != egressproxy.Marker {
		t.Fatalf("no marker: %s / %q", body, resp.Header.Get("X-Echo-Authorization"))
	}
	if !strings.Contains(body, `"host":"`+strings.TrimPrefix(f.api.URL, "https://")+`"`) {
		t.Fatalf("the upstream saw another Host: %s", body)
	}
	if strings.Contains(body, "forged") {
		t.Fatalf("the client's Authorization was passed on: %s", body)
	}
}

// Another orchestrator's sandbox reaches the same host under its own
// allowlist, tunnelled: the upstream sees no credential.
func TestOtherOrchestratorGetsNoCredential(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, f.proxy.URL(betaToken))
	resp, _ := get(t, c, f.api.URL+"/hello")
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("beta: %d, want the upstream's 401", resp.StatusCode)
	}
	if issuer := resp.TLS.PeerCertificates[0].Issuer.CommonName; issuer == "egress-ca" {
		t.Fatal("beta's connection was intercepted; it has no credential there")
	}
	for _, u := range f.proxy.Uses() {
		if u.Orchestrator == "beta" && (u.Action != egressproxy.Tunnel || u.Credential != "") {
			t.Errorf("beta use %+v", u)
		}
	}
}

func TestRefusals(t *testing.T) {
	f := newFixture(t)
	alpha := "garra:" + config.EgressToken(alphaToken)
	target := strings.TrimPrefix(f.api.URL, "https://")
	for _, tt := range []struct {
		name, auth, target string
		status             int
		kind               errkinds.Kind
	}{
		{"no credentials", "", target, 407, errkinds.EgressProxyAuth},
		{"the sandbox token itself", "garra:" + alphaToken, target, 407, errkinds.EgressProxyAuth},
		{"wrong user", "root:" + config.EgressToken(alphaToken), target, 407, errkinds.EgressProxyAuth},
		{"host outside the allowlist", alpha, "localhost:" + strings.Split(target, ":")[1], 403, errkinds.EgressHostNotAllowed},
		{"another host", alpha, "example.com:443", 403, errkinds.EgressHostNotAllowed},
	} {
		resp := rawConnect(t, f.proxy.Addr, tt.auth, tt.target)
		if resp.StatusCode != tt.status || resp.Header.Get(egressproxy.HeaderRefused) != string(tt.kind) {
			t.Errorf("%s: %d %q, want %d %q", tt.name, resp.StatusCode, resp.Header.Get(egressproxy.HeaderRefused), tt.status, tt.kind)
		}
	}
}

// A plain http:// request to a credential host is refused rather than
// sent with the credential in clear; one without a credential is served.
func TestPlainHTTP(t *testing.T) {
	f := newFixture(t)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "plain "+r.Header.Get("Authorization"))
	}))
	t.Cleanup(plain.Close)
	resp, _ := get(t, f.client(t, f.proxy.URL(alphaToken)), plain.URL+"/x")
	if resp.StatusCode != 403 || resp.Header.Get(egressproxy.HeaderRefused) != string(errkinds.EgressPlaintext) {
		t.Fatalf("alpha over http: %d %q", resp.StatusCode, resp.Header.Get(egressproxy.HeaderRefused))
	}
	resp, body := get(t, f.client(t, f.proxy.URL(betaToken)), plain.URL+"/x")
	if resp.StatusCode != 200 || body != "plain " {
		t.Fatalf("beta over http: %d %q", resp.StatusCode, body)
	}
}

// Emptying the credential's file and reloading refuses the next request,
// on the same kept-alive intercepted connection; restoring it serves again.
func TestRevokedCredential(t *testing.T) {
	f := newFixture(t)
	c := f.client(t, f.proxy.URL(alphaToken))
	if resp, _ := get(t, c, f.api.URL+"/1"); resp.StatusCode != 200 {
		t.Fatalf("before: %d", resp.StatusCode)
	}
	hits := f.api.Hits.Load()
	if err := os.WriteFile(f.credFile, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	f.proxy.Reload(t)
	resp, _ := get(t, c, f.api.URL+"/2")
	if resp.StatusCode != 503 || resp.Header.Get(egressproxy.HeaderRefused) != string(errkinds.EgressCredentialUnavailable) {
		t.Fatalf("after revocation: %d %q", resp.StatusCode, resp.Header.Get(egressproxy.HeaderRefused))
	}
	if f.api.Hits.Load() != hits {
		t.Fatal("the refused request reached the upstream")
	}
	if err := os.Remove(f.credFile); err != nil {
		t.Fatal(err)
	}
	f.proxy.Reload(t)
	if resp, _ := get(t, c, f.api.URL+"/3"); resp.StatusCode != 503 {
		t.Fatalf("file removed: %d", resp.StatusCode)
	}
	if err := os.WriteFile(f.credFile, []byte(apiSecret), 0o600); err != nil {
		t.Fatal(err)
	}
	f.proxy.Reload(t)
	if resp, _ := get(t, c, f.api.URL+"/4"); resp.StatusCode != 200 {
		t.Fatalf("restored: %d", resp.StatusCode)
	}
	// Dropping the credential from the config: its host is no longer
	// allowed for alpha at all.
	f.cfg.Gateway.MCPHTTP.Orchestrators[0].Credentials = nil
	f.proxy.Reload(t)
	if resp, _ := get(t, c, f.api.URL+"/5"); resp.StatusCode != 403 || resp.Header.Get(egressproxy.HeaderRefused) != string(errkinds.EgressHostNotAllowed) {
		t.Fatalf("credential removed: %d", resp.StatusCode)
	}
}

// The guard applies upward: an allowed name that resolves to loopback is
// refused unless the gateway's allowlist names it, and an upstream whose
// certificate does not verify is never trusted.
func TestUpstreamGuardAndVerification(t *testing.T) {
	f := newFixture(t)
	f.cfg.Gateway.MCPHTTP.Orchestrators[1].Egress.Hosts = []string{"localhost", "127.0.0.1"}
	strict := proxytest.Start(t, proxytest.Options{Config: f.cfg, AllowedHosts: nil, RootCAs: x509.NewCertPool()})
	port := strings.Split(strings.TrimPrefix(f.api.URL, "https://"), ":")[1]
	resp := rawConnect(t, strict.Addr, "garra:"+config.EgressToken(betaToken), "localhost:"+port)
	if resp.StatusCode != 403 || resp.Header.Get(egressproxy.HeaderRefused) != string(errkinds.EgressDestinationRefused) {
		t.Fatalf("loopback upstream: %d %q", resp.StatusCode, resp.Header.Get(egressproxy.HeaderRefused))
	}
	unverified := proxytest.Start(t, proxytest.Options{Config: f.cfg, AllowedHosts: []string{"127.0.0.1"}, RootCAs: x509.NewCertPool()})
	resp, _ = get(t, f.client(t, unverified.URL(alphaToken)), f.api.URL+"/hello")
	if resp.StatusCode != 502 || resp.Header.Get(egressproxy.HeaderRefused) != string(errkinds.EgressUpstreamFailed) {
		t.Fatalf("unverified upstream: %d %q", resp.StatusCode, resp.Header.Get(egressproxy.HeaderRefused))
	}
	if f.api.Authorized.Load() != 0 {
		t.Fatal("the credential went to an upstream that did not verify")
	}
}

// Each use is a span with the orchestrator, the credential's name, the
// host and the outcome; no attribute holds the value.
func TestSpans(t *testing.T) {
	f := newFixture(t)
	rec := tracetest.NewSpanRecorder()
	roots := x509.NewCertPool()
	roots.AddCert(f.api.Certificate())
	traced := proxytest.Start(t, proxytest.Options{Config: f.cfg, AllowedHosts: []string{"127.0.0.1"}, RootCAs: roots,
		TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))})
	if resp, _ := get(t, f.client(t, traced.URL(alphaToken)), f.api.URL+"/echo"); resp.StatusCode != 200 {
		t.Fatalf("%d", resp.StatusCode)
	}
	_ = rawConnect(t, traced.Addr, "garra:"+config.EgressToken(alphaToken), "example.com:443")
	got := map[string]map[string]string{}
	for _, s := range rec.Ended() {
		attrs := map[string]string{}
		for _, kv := range s.Attributes() {
			attrs[string(kv.Key)] = kv.Value.String()
			if strings.Contains(kv.Value.String(), apiSecret) {
				t.Errorf("span %s attribute %s holds the credential", s.Name(), kv.Key)
			}
		}
		got[s.Name()] = attrs
	}
	inj := got["egress inject"]
	if inj["garra.orchestrator"] != "alpha" || inj["garra.credential"] != "api" || inj["server.address"] != "127.0.0.1" || inj["http.response.status_code"] != "200" || inj["garra.egress.path_prefix"] != "/" {
		t.Errorf("inject span %v", inj)
	}
	if ref := got["egress refuse"]; ref["error.type"] != string(errkinds.EgressHostNotAllowed) || ref["server.address"] != "" {
		t.Errorf("refusal span %v (a refused host is caller-chosen text and stays out)", ref)
	}
}
