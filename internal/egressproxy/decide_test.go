package egressproxy

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/errkinds"
)

func testRules() *Rules {
	return &Rules{
		Orchestrator: "alpha",
		Hosts:        []string{"pypi.org", "*.pythonhosted.org"},
		Credentials: []*Credential{
			{Name: "gh-read", Hosts: []string{"github.com", "*.githubusercontent.com"}, Methods: []string{"GET", "HEAD"},
				PathPrefixes: []string{"/acme/"}, Header: "Authorization", value: "Bearer r"},
			{Name: "gh-push", Hosts: []string{"github.com"}, Methods: []string{"POST"}, PathPrefixes: []string{"/acme/app.git/"},
				Header: "Authorization", value: "Basic p"},
			{Name: "tickets", Hosts: []string{"api.tickets.example"}, Header: "X-Api-Key", value: "k"},
			{Name: "revoked", Hosts: []string{"registry.example"}, Header: "Authorization"},
		},
	}
}

func TestConnect(t *testing.T) {
	r := testRules()
	for _, tt := range []struct {
		host         string
		canIntercept bool
		want         Action
		kind         errkinds.Kind
	}{
		{"pypi.org", true, Tunnel, ""},
		{"PyPI.org.", true, Tunnel, ""},
		{"files.pythonhosted.org", true, Tunnel, ""},
		{"a.b.pythonhosted.org", true, Tunnel, ""},
		{"pythonhosted.org", true, Refuse, errkinds.EgressHostNotAllowed}, // *. is below the domain only
		{"evilpythonhosted.org", true, Refuse, errkinds.EgressHostNotAllowed},
		{"github.com", true, Intercept, ""},
		{"raw.githubusercontent.com", true, Intercept, ""},
		{"api.tickets.example", true, Intercept, ""},
		{"registry.example", true, Intercept, ""}, // refused per request, with the kind that says why
		{"github.com", false, Refuse, errkinds.EgressCredentialUnavailable},
		{"pypi.org", false, Tunnel, ""},
		{"example.com", true, Refuse, errkinds.EgressHostNotAllowed},
		{"github.com.evil.example", true, Refuse, errkinds.EgressHostNotAllowed},
		{"127.0.0.1", true, Refuse, errkinds.EgressHostNotAllowed},
	} {
		d := r.Connect(tt.host, tt.canIntercept)
		if d.Action != tt.want || d.Kind != tt.kind {
			t.Errorf("Connect(%q, %v) = %v %q, want %v %q", tt.host, tt.canIntercept, d.Action, d.Kind, tt.want, tt.kind)
		}
		if d.Action == Refuse && d.Rule == "" {
			t.Errorf("Connect(%q): a refusal without its rule", tt.host)
		}
	}
}

func TestRequest(t *testing.T) {
	r := testRules()
	for _, tt := range []struct {
		name         string
		plain        bool
		host, m, p   string
		want         Action
		kind         errkinds.Kind
		cred, prefix string
	}{
		{"read under the prefix", false, "github.com", "GET", "/acme/app.git/info/refs", Inject, "", "gh-read", "/acme/"},
		{"push under its prefix", false, "github.com", "POST", "/acme/app.git/git-receive-pack", Inject, "", "gh-push", "/acme/app.git/"},
		{"push elsewhere: no credential", false, "github.com", "POST", "/acme/other.git/git-receive-pack", Forward, "", "", ""},
		{"another org: no credential", false, "github.com", "GET", "/other/x", Forward, "", "", ""},
		{"dot segments never match a prefix", false, "github.com", "GET", "/acme/../other/x", Forward, "", "", ""},
		{"encoded slash never matches", false, "github.com", "GET", "/acme%2f..%2fother", Forward, "", "", ""},
		{"encoded dot never matches", false, "github.com", "GET", "/acme/%2e%2e/other", Forward, "", "", ""},
		{"double slash never matches", false, "github.com", "GET", "/acme//x", Forward, "", "", ""},
		{"method outside the list", false, "github.com", "DELETE", "/acme/x", Forward, "", "", ""},
		{"wildcard credential host", false, "raw.githubusercontent.com", "GET", "/acme/f", Inject, "", "gh-read", "/acme/"},
		{"any method and path", false, "api.tickets.example", "PATCH", "/v1/t/1", Inject, "", "tickets", ""},
		{"dot segments without prefixes", false, "api.tickets.example", "GET", "/a/../b", Inject, "", "tickets", ""},
		{"plain http with a credential", true, "api.tickets.example", "GET", "/v1", Refuse, errkinds.EgressPlaintext, "tickets", ""},
		{"plain http without one", true, "pypi.org", "GET", "/simple/", Forward, "", "", ""},
		{"plain http, credential host, no match", true, "github.com", "GET", "/other/", Forward, "", "", ""},
		{"revoked credential", false, "registry.example", "GET", "/v2/", Refuse, errkinds.EgressCredentialUnavailable, "revoked", ""},
		{"host outside", false, "example.com", "GET", "/", Refuse, errkinds.EgressHostNotAllowed, "", ""},
		{"plain host outside", true, "example.com", "GET", "/", Refuse, errkinds.EgressHostNotAllowed, "", ""},
	} {
		d := r.Request(tt.plain, tt.host, tt.m, tt.p)
		cred := ""
		if d.Credential != nil {
			cred = d.Credential.Name
		}
		if d.Action != tt.want || d.Kind != tt.kind || cred != tt.cred || d.PathPrefix != tt.prefix {
			t.Errorf("%s: %v %q %q %q, want %v %q %q %q", tt.name, d.Action, d.Kind, cred, d.PathPrefix, tt.want, tt.kind, tt.cred, tt.prefix)
		}
	}
}

func TestPathIsClean(t *testing.T) {
	for p, want := range map[string]bool{
		"/": true, "/a/b": true, "/a/b/": true, "/a.git/info/refs": true, "/a/..b": true,
		"": false, "a": false, "/a/../b": false, "/./a": false, "/a/.": false, "//a": false,
		"/a%2Fb": false, "/a%5cb": false, "/a\\b": false, "/%2e%2e/": false, "/a%252f": false,
	} {
		if got := pathIsClean(p); got != want {
			t.Errorf("pathIsClean(%q) = %v", p, got)
		}
	}
}

// A value a header cannot carry is unavailable, not sent broken.
func TestBuildRefusesAValueWithALineBreak(t *testing.T) {
	dir := t.TempDir()
	tok, cred := filepath.Join(dir, "tok"), filepath.Join(dir, "cred")
	if err := os.WriteFile(tok, []byte("sandbox-token-0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cred, []byte("line1\nline2"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Gateway: config.Gateway{MCPHTTP: config.MCPHTTP{Orchestrators: []config.Orchestrator{{
		Name: "a", Sandbox: &config.OrchestratorSandbox{URL: "http://s", TokenFile: tok},
		Credentials: []config.Credential{{Name: "c", File: cred, Hosts: []string{"h.example"}}},
	}}}}}
	pol, errs := Build(cfg, func(string) string { return "" }, nil, nil)
	if len(errs) != 1 || strings.Contains(errs[0].Error(), "line2") {
		t.Fatalf("errors %v", errs)
	}
	r, err := pol.Authenticate("Basic " + base64.StdEncoding.EncodeToString([]byte("garra:"+config.EgressToken("sandbox-token-0123456789"))))
	if err != nil {
		t.Fatal(err)
	}
	if d := r.Request(false, "h.example", "GET", "/"); d.Kind != errkinds.EgressCredentialUnavailable {
		t.Fatalf("%+v", d)
	}
}

// The sandbox token and the credential are read through the reader Build
// is given (the gateway's watched Secret), not from disk.
func TestBuildReadsThroughTheReader(t *testing.T) {
	values := map[string]string{"/watched/tok": "old-token-0123456789\nnew-token-0123456789", "/watched/cred": "cred-value-0123456789"}
	read := func(path string) (string, error) {
		if v, ok := values[path]; ok {
			return v, nil
		}
		return "", fmt.Errorf("%s: not there", path)
	}
	cfg := &config.Config{Gateway: config.Gateway{MCPHTTP: config.MCPHTTP{Orchestrators: []config.Orchestrator{{
		Name: "a", Sandbox: &config.OrchestratorSandbox{URL: "http://s", TokenFile: "/watched/tok"},
		Credentials: []config.Credential{{Name: "c", File: "/watched/cred", Hosts: []string{"h.example"}}},
	}}}}}
	pol, errs := Build(cfg, func(string) string { return "" }, read, nil)
	if len(errs) != 0 {
		t.Fatalf("errors %v", errs)
	}
	for _, tok := range []string{"old-token-0123456789", "new-token-0123456789"} {
		r, err := pol.Authenticate("Basic " + base64.StdEncoding.EncodeToString([]byte("garra:"+config.EgressToken(tok))))
		if err != nil {
			t.Fatalf("the sandbox with %s: %v", tok, err)
		}
		if d := r.Request(false, "h.example", "GET", "/"); d.Kind != "" {
			t.Fatalf("a request with the credential: %+v", d)
		}
	}
}
