package gateway_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/egressproxy"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/gateway"
	"github.com/garraia/garra/internal/sandbox"
	"github.com/garraia/garra/test/fakes/egressdouble"
	"github.com/garraia/garra/test/fakes/llmdouble"
)

const (
	egressSandboxToken = "alpha-sandbox-token-0123456789abcdef"
	egressSecret       = "gh-credential-value-0123456789"
)

// The gateway's egress proxy injects a credential read from a file the
// reload watches: emptying the file and reloading refuses the next
// request; every use is an audit line and a metric, none with the value.
func TestGatewayEgressProxyReloadAuditMetrics(t *testing.T) {
	api := egressdouble.NewAPI(t, "127.0.0.1", egressSecret)
	l := newLive(t, map[string]string{"ALPHA_KEY": "alpha-token-0123456789abcdef0123456789", "OPENROUTER_API_KEY": "k"})
	caCert, caKey := egressdouble.WriteCA(t, l.tokens, "egress-ca", true)
	l.writeToken("alpha-sandbox", egressSandboxToken)
	l.writeToken("cred.alpha.gh", egressSecret+"\n")
	l.writeConfig(`gateway:
  api_key: owner-key-0123456789abcdef0123456789abcdef
  egress: {listen: "127.0.0.1:0", ca_cert_file: ` + caCert + `, ca_key_file: ` + caKey + `}
  mcp_http:
    enabled: true
    web_fetch_allowed_hosts: ["127.0.0.1"]
    orchestrators:
      - name: alpha
        key_env: ALPHA_KEY
        sandbox: {url: "http://127.0.0.1:1/mcp", token_file: ` + l.keyFile("alpha-sandbox") + `}
        credentials:
          - name: gh
            file: ` + l.keyFile("cred.alpha.gh") + `
            hosts: ["127.0.0.1"]
            methods: [GET]
            path_prefixes: [/repos/]
`)
	auditPath := filepath.Join(t.TempDir(), "audit.jsonl")
	roots := x509.NewCertPool()
	roots.AddCert(api.Certificate())
	l.serve(func(o *gateway.Options) {
		o.Audit = audit.New(audit.Options{Path: auditPath})
		o.EgressRootCAs = roots
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- l.gw.ServeEgress(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-served })

	pool := x509.NewCertPool()
	pem, err := os.ReadFile(caCert)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(pem)
	proxy := &url.URL{Scheme: "http", Host: ln.Addr().String(), User: url.UserPassword("garra", config.EgressToken(egressSandboxToken))}
	tr := &http.Transport{Proxy: http.ProxyURL(proxy), TLSClientConfig: &tls.Config{RootCAs: pool}}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := c.Get(api.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = resp.Body.Close() }()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get(egressproxy.HeaderRefused) + string(b)
	}
	if code, body := get("/repos/acme"); code != 200 || body != "ok /repos/acme" {
		t.Fatalf("injected: %d %q", code, body)
	}
	if code, _ := get("/other"); code != 401 {
		t.Fatalf("outside the path prefix the upstream must see no credential: %d", code)
	}

	// Revoked: the file emptied, the reload applies the rest.
	l.writeToken("cred.alpha.gh", "")
	if got := l.gw.Reload(); got != gateway.ReloadApplied {
		t.Fatalf("reload: %s\n%s", got, l.logs.String())
	}
	if code, body := get("/repos/acme"); code != 503 || !strings.HasPrefix(body, string(errkinds.EgressCredentialUnavailable)) {
		t.Fatalf("revoked: %d %q", code, body)
	}
	// Rotated back in.
	l.writeToken("cred.alpha.gh", egressSecret)
	if got := l.gw.Reload(); got != gateway.ReloadApplied {
		t.Fatalf("reload: %s", got)
	}
	if code, _ := get("/repos/acme"); code != 200 {
		t.Fatalf("restored: %d", code)
	}

	lines, err := os.ReadFile(auditPath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(lines)
	for _, want := range []string{`"surface":"egress"`, `"caller":"alpha"`, `"credential":"gh"`, `"host":"127.0.0.1"`, `"path_prefix":"/repos/"`, `"status":200`,
		`"kind":"egress_credential_unavailable"`} {
		if !strings.Contains(text, want) {
			t.Errorf("audit lacks %s:\n%s", want, text)
		}
	}
	metrics := httpGetBody(t, l.url+"/metrics")
	for _, want := range []string{`garra_egress_requests_total{caller="orchestrator",credential="credential",result="inject"} 2`,
		`garra_egress_requests_total{caller="orchestrator",credential="credential",result="egress_credential_unavailable"} 1`,
		`garra_egress_requests_total{caller="orchestrator",credential="none",result="forward"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	for where, s := range map[string]string{"audit": text, "metrics": metrics, "log": l.logs.String()} {
		if strings.Contains(s, egressSecret) || strings.Contains(s, egressSandboxToken) {
			t.Errorf("the %s holds a secret", where)
		}
	}
}

func httpGetBody(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// BenchmarkGatewayHeapPerOrchestratorWithCredentials is the live heap a
// gateway holds per orchestrator that has a sandbox and two credentials
// behind the egress proxy (target: at most 1 MiB), beside the same
// orchestrators without egress: the second column is what the
// credentials themselves add.
func BenchmarkGatewayHeapPerOrchestratorWithCredentials(b *testing.B) {
	const n = 50
	dir := b.TempDir()
	caCert, caKey := egressdouble.WriteCA(b, dir, "egress-ca", true)
	env := map[string]string{"OPENROUTER_API_KEY": "k"}
	build := func(withCredentials bool) string {
		var sb strings.Builder
		sb.WriteString("data_dir: " + dir + "\ngateway:\n  api_key: owner-key-0123456789abcdef0123456789abcdef\n")
		if withCredentials {
			sb.WriteString("  egress: {listen: \":3128\", ca_cert_file: " + caCert + ", ca_key_file: " + caKey + "}\n")
		}
		sb.WriteString("  mcp_http:\n    enabled: true\n    allow_agent: true\n    orchestrators:\n")
		for i := range n {
			name := "o" + strconv.Itoa(i)
			env[strings.ToUpper(name)+"_KEY"] = fmt.Sprintf("orchestrator-token-%032d", i)
			tok := filepath.Join(dir, name+".sandbox")
			write(b, tok, fmt.Sprintf("sandbox-token-%032d", i))
			fmt.Fprintf(&sb, "      - name: %s\n        key_env: %s_KEY\n        tools: [status, agent]\n        sandbox: {url: \"http://127.0.0.1:1/mcp\", token_file: %s}\n", name, strings.ToUpper(name), tok)
			if withCredentials {
				c1, c2 := filepath.Join(dir, name+".gh"), filepath.Join(dir, name+".npm")
				write(b, c1, fmt.Sprintf("ghp_%036d", i))
				write(b, c2, fmt.Sprintf("npm_%036d", i))
				fmt.Fprintf(&sb, "        egress: {hosts: [pypi.org, '*.pythonhosted.org']}\n        credentials:\n"+
					"          - {name: github, file: %s, hosts: [github.com], inject: {scheme: basic, username: x-access-token}}\n"+
					"          - {name: npm, file: %s, hosts: [registry.npmjs.org]}\n", c1, c2)
			}
		}
		return sb.String()
	}
	heapOf := func(yaml string) uint64 {
		cfg, err := config.FromBytes([]byte(yaml), func(k string) string { return env[k] })
		if err != nil {
			b.Fatal(err)
		}
		before := liveHeap()
		g, err := gateway.New(gateway.Options{Config: cfg, Getenv: func(k string) string { return env[k] }, Version: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		after := liveHeap()
		runtime.KeepAlive(g)
		return after - before
	}
	with, without := build(true), build(false)
	var perWith, perWithout float64
	for b.Loop() {
		perWith = float64(heapOf(with)) / n
		perWithout = float64(heapOf(without)) / n
	}
	b.ReportMetric(perWith/1024, "KiB/orchestrator")
	b.ReportMetric((perWith-perWithout)/1024, "KiB/orchestrator-for-egress")
	b.ReportMetric(0, "ns/op")
}

func write(b testing.TB, path, content string) {
	b.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		b.Fatal(err)
	}
}

func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// The whole path: the model asks for bash in the sandbox, which calls an
// HTTPS API that requires a credential through the gateway's egress
// proxy; the API is served, and nothing the model is sent holds the
// credential, even though the API echoes it.
func TestAgentUsesACredentialItNeverSees(t *testing.T) {
	const upstream = "127.0.0.2" // bash's NO_PROXY covers 127.0.0.1
	api := egressdouble.NewAPI(t, upstream, egressSecret)
	dir := t.TempDir()
	caCert, caKey := egressdouble.WriteCA(t, dir, "egress-ca", true)
	cred := filepath.Join(dir, "cred.alpha.api")
	write(t, cred, egressSecret)
	eln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sbxURL, sbxLogs, ws := startSandbox(t, func(o *sandbox.Options) {
		o.EgressProxy, o.EgressCAFile = "http://"+eln.Addr().String(), caCert
	})
	// The gate refuses network programs on bash's command line; a script
	// the agent wrote runs them (the kernel and the proxy are the bounds).
	write(t, filepath.Join(ws, "call.sh"), "curl -sS "+api.URL+"/v1/echo\n")
	double := llmdouble.New(t,
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "bash", Args: `{"command":"bash call.sh"}`}}},
		llmdouble.Step{Text: "done"})
	yaml := "gateway:\n  api_key: " + ownerKey + "\n" +
		"  egress: {listen: \"127.0.0.1:0\", ca_cert_file: " + caCert + ", ca_key_file: " + caKey + "}\n" +
		"  mcp_http:\n    enabled: true\n    allow_agent: true\n    web_fetch_allowed_hosts: [\"" + upstream + "\"]\n" +
		"    orchestrators:\n      - name: alpha\n        key_env: ALPHA_KEY\n        tools: [agent]\n" +
		"        sandbox: {url: \"" + sbxURL + "\", token_env: SBX_TOKEN}\n" +
		"        credentials: [{name: api, file: " + cred + ", hosts: [\"" + upstream + "\"]}]\n" +
		"llm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
	roots := x509.NewCertPool()
	roots.AddCert(api.Certificate())
	h := start(t, yaml, map[string]string{"ALPHA_KEY": "alpha-token-1234567", "OPENROUTER_API_KEY": "llm-test-key-0123", "SBX_TOKEN": sandboxToken},
		func(o *gateway.Options) { o.EgressRootCAs = roots })
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- h.gw.ServeEgress(ctx, eln) }()
	t.Cleanup(func() { cancel(); <-served })

	res, isErr := call(t, client(t, h.url, "alpha-token-1234567"), "garra_agent", map[string]any{"message": "call the API"})
	if isErr || res["ok"] != true {
		t.Fatalf("agent: %v", res)
	}
	if api.Authorized.Load() != 1 {
		t.Fatalf("the API was served %d times with the credential, want 1", api.Authorized.Load())
	}
	reqs := double.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	sent := string(reqs[1].RawBody) // the tool result, as the model got it
	if !strings.Contains(sent, egressproxy.Marker) {
		t.Fatalf("the echo did not reach the model redacted:\n%s", sent)
	}
	for where, s := range map[string]string{"the model's input": sent, "the answer": fmt.Sprint(res), "the sandbox's log": sbxLogs.String(), "the gateway's log": h.logs.String()} {
		for _, form := range []string{egressSecret, base64.StdEncoding.EncodeToString([]byte(egressSecret)), sandboxToken} {
			if strings.Contains(s, form) {
				t.Errorf("%s holds a secret (%.6s…)", where, form)
			}
		}
	}
}

// Run serves the egress proxy on gateway.egress.listen beside the MCP
// listener, and stops it with the gateway.
func TestRunServesTheEgressProxy(t *testing.T) {
	l := newLive(t, map[string]string{"OPENROUTER_API_KEY": "k"})
	caCert, caKey := egressdouble.WriteCA(t, l.tokens, "egress-ca", true)
	l.writeConfig("gateway:\n  listen: 127.0.0.1:0\n  egress: {listen: \"127.0.0.1:0\", ca_cert_file: " + caCert + ", ca_key_file: " + caKey + "}\n")
	stop, wait := l.run()
	var addr string
	for _, line := range strings.Split(l.logs.String(), "\n") {
		if _, rest, ok := strings.Cut(line, `msg="garra gateway egress proxy listening" addr=`); ok {
			addr = strings.TrimSpace(rest)
		}
	}
	if addr == "" {
		t.Fatalf("no egress listener logged:\n%s", l.logs.String())
	}
	req, _ := http.NewRequest(http.MethodGet, "http://example.com/", nil)
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr})}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusProxyAuthRequired || resp.Header.Get(egressproxy.HeaderRefused) != string(errkinds.EgressProxyAuth) {
		t.Fatalf("unauthenticated: %d %q", resp.StatusCode, resp.Header.Get(egressproxy.HeaderRefused))
	}
	tr.CloseIdleConnections()
	stop()
	if err := wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := net.Dial("tcp", addr); err == nil {
		t.Fatal("the egress proxy still listens after the gateway stopped")
	}
}
