package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garraia/garra/test/fakes/egressdouble"
)

func TestCheckEgress(t *testing.T) {
	dir := t.TempDir()
	caCert, caKey := egressdouble.WriteCA(t, dir, "ca", true)
	leafCert, leafKey := egressdouble.WriteCA(t, dir, "leaf", false)
	_, otherKey := egressdouble.WriteCA(t, dir, "other", true)
	cred := filepath.Join(dir, "cred")
	if err := os.WriteFile(cred, []byte("ghp_value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"K": longToken, "S": longToken, "OPENROUTER_API_KEY": "k"}
	proxy := "gateway: {egress: {listen: ':3128', ca_cert_file: " + caCert + ", ca_key_file: " + caKey + "}, mcp_http: {orchestrators: [ORCH]}}"
	orch := func(rest string) string {
		return strings.Replace(proxy, "ORCH", "{name: o, key_env: K, sandbox: {url: 'http://s:8080/mcp', token_env: S}"+rest+"}", 1)
	}
	credential := func(fields string) string {
		return orch(", credentials: [{name: gh, file: " + cred + ", hosts: [github.com]" + fields + "}]")
	}
	const f = "gateway.mcp_http.orchestrators[o]"
	tests := []struct {
		name     string
		yaml     string
		fields   []string
		warnings []string
	}{
		{"proxy and a credential", credential(", methods: [GET, POST], path_prefixes: [/acme/], inject: {scheme: basic, username: x-access-token}"), nil, nil},
		{"egress hosts", orch(", egress: {hosts: [pypi.org, '*.pythonhosted.org', 127.0.0.1]}"), nil, nil},
		{"bad egress hosts", orch(", egress: {hosts: ['https://pypi.org', 'pypi.org:443', '*', '*.*.x', '']}"),
			[]string{f + ".egress.hosts[0]", f + ".egress.hosts[1]", f + ".egress.hosts[2]", f + ".egress.hosts[3]", f + ".egress.hosts[4]"}, nil},
		{"credential names", orch(", credentials: [{file: " + cred + ", hosts: [a.b]}, {name: Bad_Name, file: " + cred + ", hosts: [a.b]}, {name: x, file: " + cred + ", hosts: [a.b]}, {name: x, file: " + cred + ", hosts: [a.b]}]"),
			[]string{f + ".credentials[0].name", f + ".credentials[1].name", f + ".credentials[3].name"}, nil},
		{"credential without file or hosts", orch(", credentials: [{name: gh}]"), []string{f + ".credentials[0].file", f + ".credentials[0].hosts"}, nil},
		{"credential hosts", orch(", credentials: [{name: gh, file: " + cred + ", hosts: [github.com, 'git hub', '*.github.com', 'github.com/x']}]"),
			[]string{f + ".credentials[0].hosts[1]", f + ".credentials[0].hosts[3]"}, nil},
		{"methods", credential(", methods: [GET, get, 'PO ST', '']"),
			[]string{f + ".credentials[0].methods[1]", f + ".credentials[0].methods[2]", f + ".credentials[0].methods[3]"}, nil},
		{"path prefixes", credential(", path_prefixes: [/ok, nope, '/a/../b', '/q?x=1', '/.']"),
			[]string{f + ".credentials[0].path_prefixes[1]", f + ".credentials[0].path_prefixes[2]", f + ".credentials[0].path_prefixes[3]", f + ".credentials[0].path_prefixes[4]"}, nil},
		{"scheme", credential(", inject: {scheme: digest}"), []string{f + ".credentials[0].inject.scheme"}, nil},
		{"basic without username", credential(", inject: {scheme: basic}"), []string{f + ".credentials[0].inject.username"}, nil},
		{"basic username with a colon", credential(", inject: {scheme: basic, username: 'a:b'}"), []string{f + ".credentials[0].inject.username"}, nil},
		{"username without basic", credential(", inject: {username: x}"), []string{f + ".credentials[0].inject.username"}, nil},
		{"named header", credential(", inject: {header: X-Api-Key, scheme: none}"), nil, nil},
		{"bad headers", credential(", inject: {header: 'X Api'}"), []string{f + ".credentials[0].inject.header"}, nil},
		{"hop-by-hop header", credential(", inject: {header: Transfer-Encoding}"), []string{f + ".credentials[0].inject.header"}, nil},
		{"host header", credential(", inject: {header: host}"), []string{f + ".credentials[0].inject.header"}, nil},
		{"proxy header", credential(", inject: {header: Proxy-Authorization}"), []string{f + ".credentials[0].inject.header"}, nil},
		{"unreadable credential file", orch(", credentials: [{name: gh, file: /nonexistent/cred, hosts: [a.b]}]"), []string{f + ".credentials[0].file"}, nil},
		{"empty credential file", orch(", credentials: [{name: gh, file: " + empty + ", hosts: [a.b]}]"), []string{f + ".credentials[0].file"}, nil},
		{"credentials without a sandbox", "gateway: {mcp_http: {orchestrators: [{name: o, key_env: K, credentials: [{name: gh, file: " + cred + ", hosts: [a.b]}]}]}}",
			[]string{f + ".credentials"}, []string{"gateway.egress.listen"}},
		{"egress without a sandbox", "gateway: {mcp_http: {orchestrators: [{name: o, key_env: K, egress: {hosts: [a.b]}}]}}", []string{f + ".egress"}, nil},
		{"credentials without the proxy", "gateway: {mcp_http: {orchestrators: [{name: o, key_env: K, sandbox: {url: 'http://s:8080/mcp', token_env: S}, credentials: [{name: gh, file: " + cred + ", hosts: [a.b]}]}]}}",
			nil, []string{"gateway.egress.listen"}},
		{"listen without a CA", "gateway: {egress: {listen: ':3128'}}", []string{"gateway.egress.ca_cert_file", "gateway.egress.ca_key_file"}, nil},
		{"bad listen", "gateway: {egress: {listen: '3128', ca_cert_file: " + caCert + ", ca_key_file: " + caKey + "}}", []string{"gateway.egress.listen"}, nil},
		{"listen port out of range", "gateway: {egress: {listen: ':99999', ca_cert_file: " + caCert + ", ca_key_file: " + caKey + "}}", []string{"gateway.egress.listen"}, nil},
		{"CA file missing", "gateway: {egress: {listen: ':3128', ca_cert_file: /nonexistent/ca.crt, ca_key_file: " + caKey + "}}", []string{"gateway.egress.ca_cert_file"}, nil},
		{"CA is no CA", "gateway: {egress: {listen: ':3128', ca_cert_file: " + leafCert + ", ca_key_file: " + leafKey + "}}", []string{"gateway.egress.ca_cert_file"}, nil},
		{"CA key of another", "gateway: {egress: {listen: ':3128', ca_cert_file: " + caCert + ", ca_key_file: " + otherKey + "}}", []string{"gateway.egress.ca_key_file"}, nil},
		{"CA not PEM", "gateway: {egress: {listen: ':3128', ca_cert_file: " + cred + ", ca_key_file: " + caKey + "}}", []string{"gateway.egress.ca_key_file"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			cfg.applyDefaults()
			var got, warned []string
			for _, p := range cfg.Check(func(k string) string { return env[k] }) {
				if p.Message == "" {
					t.Errorf("empty message for %s", p.Field)
				}
				if strings.Contains(p.Message, "ghp_value") {
					t.Errorf("%s: the message holds the credential: %s", p.Field, p.Message)
				}
				if p.Warning {
					warned = append(warned, p.Field)
				} else {
					got = append(got, p.Field)
				}
			}
			if strings.Join(got, "|") != strings.Join(tt.fields, "|") || strings.Join(warned, "|") != strings.Join(tt.warnings, "|") {
				t.Fatalf("problems %v, want %v (warnings %v)", cfg.Check(func(k string) string { return env[k] }), tt.fields, tt.warnings)
			}
		})
	}
}

// A missing or emptied credential file fails closed: the rest of the
// config applies on a reload, so a revocation takes effect.
func TestCredentialFileFailsClosed(t *testing.T) {
	cfg, err := Parse([]byte("gateway: {mcp_http: {orchestrators: [{name: o, key_env: K, sandbox: {url: 'http://s:8080/mcp', token_env: S}, credentials: [{name: gh, file: /nonexistent/x, hosts: [a.b]}]}]}}"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.applyDefaults()
	for _, p := range cfg.Check(func(string) string { return longToken }) {
		if strings.HasSuffix(p.Field, ".file") && (!p.FailsClosed || p.Severity() != SeverityDisabled) {
			t.Errorf("%+v: want fails closed", p)
		}
	}
}

// Both sides derive the same token, and it reveals nothing of the
// sandbox token.
func TestEgressToken(t *testing.T) {
	a, b := EgressToken("sandbox-token-aaaaaaaa"), EgressToken("sandbox-token-bbbbbbbb")
	if a == b || len(a) != 64 || strings.Contains(a, "sandbox") {
		t.Fatalf("tokens %q %q", a, b)
	}
	// Pinned (computed independently: HMAC-SHA256 of "garra egress v1"
	// under the key "x"): every side must agree on it.
	if got := EgressToken("x"); got != "383dad8fe25cb19d637ab3dec1e7ea4295e1a15fcb95d26b18c0ab6bba035962" {
		t.Fatalf("EgressToken(x) = %q", got)
	}
}
