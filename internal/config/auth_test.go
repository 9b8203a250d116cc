package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckAuthModes(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	inCluster := map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1", "K": "tok"}
	offCluster := map[string]string{"K": "tok"}
	const o = "gateway.mcp_http.orchestrators"
	sa := func(name, ns, sa string) string {
		return "{name: " + name + ", auth: {service_account: {namespace: " + ns + ", name: " + sa + "}}}"
	}
	oidc := func(name, issuer, aud, rest string) string {
		return "{name: " + name + ", auth: {oidc: {issuer: '" + issuer + "', audience: '" + aud + "'" + rest + "}}}"
	}
	withAud := "gateway: {auth: {audience: 'http://gw.agents.svc:3888/mcp'}, mcp_http: {orchestrators: ["
	noAud := "gateway: {mcp_http: {orchestrators: ["
	tests := []struct {
		name   string
		env    map[string]string
		yaml   string
		fields []string
	}{
		{"serviceAccount in cluster", inCluster, withAud + sa("n8n", "agents", "n8n") + "]}}", nil},
		{"serviceAccount with a dotted name", inCluster, withAud + sa("n8n", "agents", "n8n.bot") + "]}}", nil},
		{"serviceAccount off-cluster with a kubeconfig", offCluster, "gateway: {auth: {audience: x, kubeconfig: '" + kubeconfig + "'}, mcp_http: {orchestrators: [" + sa("n8n", "agents", "n8n") + "]}}", nil},
		{"serviceAccount off-cluster, no API server", offCluster, withAud + sa("n8n", "agents", "n8n") + "]}}", []string{o + "[n8n].auth.service_account"}},
		{"kubeconfig unreadable", offCluster, "gateway: {auth: {audience: x, kubeconfig: /nonexistent/kubeconfig}, mcp_http: {orchestrators: [" + sa("n8n", "agents", "n8n") + "]}}", []string{"gateway.auth.kubeconfig"}},
		{"serviceAccount without a gateway audience", inCluster, noAud + sa("n8n", "agents", "n8n") + "]}}", []string{"gateway.auth.audience"}},
		{"serviceAccount bad names", inCluster, withAud + sa("n8n", "Agents", "''") + "]}}", []string{o + "[n8n].auth.service_account.namespace", o + "[n8n].auth.service_account.name"}},
		{"two entries, one ServiceAccount", inCluster, withAud + sa("a", "agents", "bot") + ", " + sa("b", "agents", "bot") + "]}}", []string{o + "[b].auth"}},
		{"oidc ok", inCluster, noAud + oidc("n8n", "https://idp.example.com/realms/x", "garra", ", subject: n8n-bot") + "]}}", nil},
		{"oidc loopback http ok", inCluster, noAud + oidc("n8n", "http://127.0.0.1:5556", "garra", ", claims: {groups: garra}") + "]}}", nil},
		{"oidc unknown scheme", inCluster, noAud + oidc("n8n", "ftp://idp.example.com", "garra", ", subject: s") + "]}}", []string{o + "[n8n].auth.oidc.issuer"}},
		{"oidc http to a remote host", inCluster, noAud + oidc("n8n", "http://idp.example.com", "garra", ", subject: s") + "]}}", []string{o + "[n8n].auth.oidc.issuer"}},
		{"oidc not a URL", inCluster, noAud + oidc("n8n", "idp.example.com", "garra", ", subject: s") + "]}}", []string{o + "[n8n].auth.oidc.issuer"}},
		{"oidc empty audience", inCluster, noAud + oidc("n8n", "https://idp.example.com", " ", ", subject: s") + "]}}", []string{o + "[n8n].auth.oidc.audience"}},
		{"oidc neither subject nor claims", inCluster, noAud + oidc("n8n", "https://idp.example.com", "garra", "") + "]}}", []string{o + "[n8n].auth.oidc"}},
		{"two entries, one OIDC identity", inCluster, noAud + oidc("a", "https://idp.example.com", "garra", ", subject: s") + ", " + oidc("b", "https://idp.example.com/", "garra", ", subject: s") + "]}}", []string{o + "[b].auth"}},
		{"same subject, other audience is another identity", inCluster, noAud + oidc("a", "https://idp.example.com", "garra", ", subject: s") + ", " + oidc("b", "https://idp.example.com", "other", ", subject: s") + "]}}", nil},
		{"both modes", inCluster, withAud + "{name: a, auth: {service_account: {namespace: ns, name: s}, oidc: {issuer: 'https://i', audience: a, subject: s}}}]}}", []string{o + "[a].auth"}},
		{"auth with no mode", inCluster, withAud + "{name: a, auth: {}}]}}", []string{o + "[a].key_env", o + "[a].auth"}},
		{"a static token beside another mode", inCluster, withAud + "{name: a, key_env: K, auth: {service_account: {namespace: ns, name: s}}}]}}", []string{o + "[a].key_env"}},
		{"token mode still needs its token", inCluster, withAud + "{name: a}]}}", []string{o + "[a].key_env"}},
		{"review cache too long", inCluster, "gateway: {auth: {review_cache_seconds: 301}}", []string{"gateway.auth.review_cache_seconds"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			cfg.applyDefaults()
			getenv := func(k string) string { return tt.env[k] }
			var got []string
			for _, p := range cfg.Check(getenv) {
				if p.Message == "" {
					t.Errorf("empty message for %s", p.Field)
				}
				if strings.HasPrefix(p.Field, "llm.") {
					continue
				}
				got = append(got, p.Field)
			}
			if strings.Join(got, "|") != strings.Join(tt.fields, "|") {
				t.Fatalf("problems %v, want %v", cfg.Check(getenv), tt.fields)
			}
		})
	}
	t.Logf("%d cases", len(tests))
}

func TestAuthMode(t *testing.T) {
	for _, tt := range []struct {
		o    Orchestrator
		want string
	}{
		{Orchestrator{}, AuthToken},
		{Orchestrator{Auth: &OrchestratorAuth{ServiceAccount: &ServiceAccountAuth{}}}, AuthServiceAccount},
		{Orchestrator{Auth: &OrchestratorAuth{OIDC: &OIDCAuth{}}}, AuthOIDC},
	} {
		if got := tt.o.AuthMode(); got != tt.want {
			t.Errorf("%+v: %s, want %s", tt.o, got, tt.want)
		}
	}
}
