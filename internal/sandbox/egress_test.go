package sandbox_test

import (
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/egressproxy/proxytest"
	"github.com/garraia/garra/internal/sandbox"
	"github.com/garraia/garra/test/fakes/egressdouble"
)

// The upstreams listen on 127.0.0.2: bash's NO_PROXY sends 127.0.0.1
// straight out, and these must be reached through the proxy.
const upstreamIP = "127.0.0.2"

const (
	apiSecret = "api-secret-ZXhhbXBsZS10b2tlbg-0042"
	gitSecret = "ghp_gitSecretValue0123456789abcdef"
)

type egressFixture struct {
	*fixture
	api   *egressdouble.API
	git   *egressdouble.Git
	proxy *proxytest.Proxy
	repo  string // the bare repository's URL
}

// newEgressFixture runs an HTTPS API and a git server that both require
// a credential, the gateway's egress proxy holding both for this
// sandbox's orchestrator, and a sandbox whose bash goes out through it.
func newEgressFixture(t *testing.T) *egressFixture {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	root := filepath.Join(dir, "repos")
	seedRepo(t, root)
	f := &egressFixture{
		api: egressdouble.NewAPI(t, upstreamIP, apiSecret),
		git: egressdouble.NewGit(t, upstreamIP, root, "x-access-token", gitSecret),
	}
	f.repo = f.git.URL + "/private.git"
	caCert, caKey := egressdouble.WriteCA(t, dir, "egress-ca", true)
	cfg := &config.Config{Gateway: config.Gateway{
		Egress: config.GatewayEgress{Listen: "127.0.0.1:0", CACertFile: caCert, CAKeyFile: caKey},
		MCPHTTP: config.MCPHTTP{Orchestrators: []config.Orchestrator{{
			Name:    "alpha",
			Sandbox: &config.OrchestratorSandbox{URL: "http://sandbox", TokenFile: write("sandbox.token", testToken)},
			Credentials: []config.Credential{
				{Name: "api", File: write("cred.api", apiSecret), Hosts: []string{upstreamIP}, PathPrefixes: []string{"/v1/"}},
				{Name: "git", File: write("cred.git", gitSecret+"\n"), Hosts: []string{upstreamIP}, PathPrefixes: []string{"/private.git/"},
					Methods: []string{"GET", "POST"}, Inject: config.CredentialInject{Scheme: config.SchemeBasic, Username: "x-access-token"}},
			},
		}}},
	}}
	roots := x509Pool(t, f.api.Server, f.git.Server)
	f.proxy = proxytest.Start(t, proxytest.Options{Config: cfg, AllowedHosts: []string{upstreamIP}, RootCAs: roots})
	f.fixture = newFixture(t, func(o *sandbox.Options) {
		o.EgressProxy, o.EgressCAFile = "http://"+f.proxy.Addr, caCert
	})
	return f
}

// seedRepo makes root/private.git, a bare repository with one commit.
func seedRepo(t *testing.T, root string) {
	t.Helper()
	bare := filepath.Join(root, "private.git")
	work := filepath.Join(t.TempDir(), "seed")
	for _, args := range [][]string{
		{"init", "-q", "--bare", "-b", "main", bare},
		{"init", "-q", "-b", "main", work},
		{"-C", work, "-c", "user.name=seed", "-c", "user.email=seed@example.invalid", "commit", "-q", "--allow-empty", "-m", "seed"},
		{"-C", work, "push", "-q", bare, "main"},
		{"-C", bare, "config", "http.receivepack", "true"},
	} {
		if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
}

// bash runs script through the sandbox's MCP bash tool, as a script file
// in the workspace: the shell gate refuses network programs and git push
// on the command line itself (a seatbelt against the careless), not in a
// script the agent wrote, and the egress path is what is tested here.
func (f *egressFixture) bash(t *testing.T, script string) string {
	t.Helper()
	if err := os.WriteFile(filepath.Join(f.ws, "run.sh"), []byte(script+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, isErr := call(t, f.client(t, testToken), "bash", map[string]any{"command": "bash run.sh", "timeout_secs": 60})
	if isErr {
		t.Fatalf("bash %q: %s", script, out)
	}
	return out
}

// secretForms are the credential values and the shapes they travel in.
func secretForms() []string {
	var out []string
	for _, v := range []string{apiSecret, gitSecret, "x-access-token:" + gitSecret} {
		out = append(out, v, base64.StdEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v)))
	}
	return append(out, testToken)
}

func assertNoSecret(t *testing.T, where, text string) {
	t.Helper()
	for _, s := range secretForms() {
		if strings.Contains(text, s) {
			t.Fatalf("%s holds a secret (%.6s…):\n%s", where, s, text)
		}
	}
}

// bash in the sandbox reaches an HTTPS API that requires a credential it
// never holds; a direct connection gets the upstream's 401, a host outside
// the allowlist the proxy's refusal.
func TestBashUsesACredentialItCannotSee(t *testing.T) {
	f := newEgressFixture(t)
	out := f.bash(t, "curl -sS "+f.api.URL+"/v1/hello")
	if out != "ok /v1/hello" {
		t.Fatalf("through the gateway: %q", out)
	}
	assertNoSecret(t, "curl's output", out)
	// An upstream that echoes the header shows the marker.
	out = f.bash(t, "curl -sS -D - "+f.api.URL+"/v1/echo")
	if !strings.Contains(out, "[REDACTED:credential]") {
		t.Fatalf("echo: %s", out)
	}
	assertNoSecret(t, "the echo", out)
	// Bypassing the proxy: the upstream does not know the sandbox.
	if out := f.bash(t, "curl -sk --noproxy '*' -o /dev/null -w '%{http_code}' "+f.api.URL+"/v1/hello"); out != "401" {
		t.Fatalf("direct: %q, want 401", out)
	}
	// Outside the allowlist: the CONNECT is refused with 403.
	if out := f.bash(t, "curl -s -o /dev/null -w '%{http_connect}' https://127.0.0.3:9/ ; true"); out != "403" {
		t.Fatalf("outside the allowlist: %q", out)
	}
	if f.api.Authorized.Load() != 2 {
		t.Fatalf("the API saw the credential %d times, want 2", f.api.Authorized.Load())
	}
}

// x509Pool trusts the servers' own certificates, as the gateway's roots
// would trust a public upstream's.
func x509Pool(t *testing.T, servers ...*httptest.Server) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	for _, s := range servers {
		pool.AddCert(s.Certificate())
	}
	return pool
}

// Egress settings bash could not use stop the sandbox at start, naming
// the variable; usable ones write the bundle of the image's roots and the
// gateway's CA.
func TestEgressSettings(t *testing.T) {
	dir := t.TempDir()
	ca, _ := egressdouble.WriteCA(t, dir, "ca", true)
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct{ proxy, ca, says string }{
		{"http://gw:3128", "", sandbox.EgressCAFileEnv},
		{"", ca, sandbox.EgressProxyEnv},
		{"https://gw:3128", ca, sandbox.EgressProxyEnv},
		{"http://gw", ca, "port"},
		{"http://u:p@gw:3128", ca, sandbox.EgressProxyEnv},
		{"http://gw:3128/x", ca, sandbox.EgressProxyEnv},
		{"http://gw:3128", filepath.Join(dir, "missing"), sandbox.EgressCAFileEnv},
		{"http://gw:3128", notPEM, "no PEM certificate"},
	} {
		_, err := sandbox.New(sandbox.Options{Workspace: t.TempDir(), Token: testToken, EgressProxy: tt.proxy, EgressCAFile: tt.ca})
		if !errors.Is(err, sandbox.ErrEgress) || !strings.Contains(err.Error(), tt.says) {
			t.Errorf("%q %q: %v, want ErrEgress saying %q", tt.proxy, tt.ca, err, tt.says)
		}
	}
	f := newFixture(t, func(o *sandbox.Options) { o.EgressProxy, o.EgressCAFile = "http://gw.example:3128", ca })
	script := `wc -c < "$SSL_CERT_FILE"; echo ===; tail -c 1500 "$SSL_CERT_FILE"; echo ===; cat "$NODE_EXTRA_CA_CERTS"`
	if err := os.WriteFile(filepath.Join(f.ws, "show.sh"), []byte(script+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, isErr := call(t, f.client(t, testToken), "bash", map[string]any{"command": "bash show.sh"})
	pem, _ := os.ReadFile(ca)
	parts := strings.Split(out, "===\n")
	if isErr || len(parts) != 3 || !strings.Contains(parts[1], strings.TrimSpace(string(pem))) || strings.TrimSpace(parts[2]) != strings.TrimSpace(string(pem)) {
		t.Fatalf("trust files: %s", out)
	}
	// The image's own roots come first, whole.
	if system, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt"); err == nil && strings.TrimSpace(parts[0]) != fmt.Sprint(len(system)+len(pem)+2) {
		t.Fatalf("bundle of %s bytes, want the image's %d + the CA's %d + 2", parts[0], len(system), len(pem))
	}
}
