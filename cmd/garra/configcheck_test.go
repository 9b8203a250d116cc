package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte("gateway:\n  mcp_http:\n    enabled: true\n    allow_send: true\n    agent_max_seconds: 900\n    orchestrators:\n      - nome: badgood\n        key_env: BADGOOD_MCP_KEY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, testEnv(t), "config", "check", "--config", bad)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 1 || len(lines) != 5 || !strings.Contains(errOut, "5 problem(s)") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr: %s", code, out, errOut)
	}
	for i, want := range []string{"llm.api_key_env: OPENROUTER_API_KEY is not set", "gateway.mcp_http.enabled:", "gateway.mcp_http.allow_send:", "gateway.mcp_http.agent_max_seconds:", "gateway.mcp_http.orchestrators[badgood].key_env: BADGOOD_MCP_KEY is not set"} {
		if !strings.HasPrefix(lines[i], want) {
			t.Errorf("line %d = %q, want prefix %q", i, lines[i], want)
		}
	}

	const long = "0123456789abcdef0123456789abcdef"
	good := writeConfig(t, "ollama", "http://127.0.0.1:11434/v1")
	out, _, code = run(t, testEnv(t, "GARRAIA_GATEWAY_API_KEY=k"+long, "BADGOOD_MCP_KEY=t"+long), "config", "check", "--config", good)
	if code != 0 || !strings.HasPrefix(out, "config ok") {
		t.Fatalf("exit %d out %q", code, out)
	}
	// A guessable owner key is refused by its field, never shown.
	out, _, code = run(t, testEnv(t, "GARRAIA_GATEWAY_API_KEY=owner-key-31-bytes-0123456789ab", "BADGOOD_MCP_KEY=t"+long), "config", "check", "--config", good)
	if code != 1 || !strings.HasPrefix(out, "gateway.api_key: ") || strings.Contains(out, "owner-key-31") {
		t.Fatalf("a 31-byte owner key: exit %d out %q", code, out)
	}
}

// A warning is printed, marked, and does not fail the check on its own;
// with an error beside it the exit is 1 and only errors are counted.
func TestConfigCheckWarnings(t *testing.T) {
	router := filepath.Join(t.TempDir(), "router.yml")
	if err := os.WriteFile(router, []byte("llm: {provider: openrouter, model: openrouter/auto}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, testEnv(t, "OPENROUTER_API_KEY=k"), "config", "check", "--config", router)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 2 || !strings.HasPrefix(lines[0], `warning: llm.model: "openrouter/auto" is a router`) ||
		!strings.HasPrefix(lines[1], "config ok with 1 warning(s)") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr: %s", code, out, errOut)
	}

	out, errOut, code = run(t, testEnv(t), "config", "check", "--config", router)
	if code != 1 || !strings.Contains(out, "warning: llm.model:") || !strings.HasPrefix(out, "llm.api_key_env: OPENROUTER_API_KEY is not set") ||
		!strings.Contains(errOut, "1 problem(s) and 1 warning(s) in") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr: %s", code, out, errOut)
	}
}

// A serviceAccount orchestrator whose API server is not there is named by
// its field; one that answers is fine.
func TestConfigCheckProbesTheAPIServer(t *testing.T) {
	dir := t.TempDir()
	kubeconfig := func(server string) string {
		p := filepath.Join(dir, "kc-"+strings.NewReplacer(":", "", "/", "").Replace(server))
		body := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: '" + server + "'}}]\n" +
			"users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/version" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(`{"major":"1","minor":"37","gitVersion":"v1.37.2"}`))
	}))
	defer api.Close()
	dead := httptest.NewServer(nil)
	dead.Close()
	cfg := func(kc string) string {
		p := filepath.Join(dir, "c-"+filepath.Base(kc)+".yml")
		body := "llm: {provider: ollama, model: llama3.2}\ngateway:\n  auth: {audience: 'http://gw.agents.svc:3888/mcp', kubeconfig: '" + kc + "'}\n" +
			"  mcp_http:\n    orchestrators:\n      - {name: robot, auth: {service_account: {namespace: agents, name: robot}}}\n"
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	out, _, code := run(t, testEnv(t), "config", "check", "--config", cfg(kubeconfig(api.URL)))
	if code != 0 {
		t.Fatalf("reachable API server: exit %d\n%s", code, out)
	}
	out, _, code = run(t, testEnv(t), "config", "check", "--config", cfg(kubeconfig(dead.URL)))
	if code != 1 || !strings.HasPrefix(out, "gateway.mcp_http.orchestrators[robot].auth.service_account: the API server at "+dead.URL+" is not reachable") {
		t.Fatalf("unreachable API server: exit %d\n%s", code, out)
	}
}

// The confinement fields are checked by name, and a config whose bash runs
// on the host is told the confinement in force.
func TestConfigCheckConfinement(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yml")
	if err := os.WriteFile(bad, []byte("llm: {provider: ollama, base_url: 'http://127.0.0.1:11434/v1'}\nagent: {confinement: strict, egress: some, expose: [rel/path]}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code := run(t, testEnv(t), "config", "check", "--config", bad)
	for _, want := range []string{`agent.confinement: "strict" is not required or best-effort`, `agent.egress: "some" is not internet or none`, `agent.expose[0]: "rel/path" is not an absolute path`} {
		if code != 1 || !strings.Contains(out, want) {
			t.Errorf("exit %d, stdout lacks %q:\n%s", code, want, out)
		}
	}
	host := filepath.Join(dir, "host.yml")
	if err := os.WriteFile(host, []byte("llm: {provider: ollama, base_url: 'http://127.0.0.1:11434/v1'}\nexecution: {profile: isolated-pod}\nagent: {egress: none}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := run(t, testEnv(t), "config", "check", "--config", host)
	if code != 0 || !strings.Contains(out, "host bash confinement: ") || !strings.Contains(out, "egress none") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr: %s", code, out, errOut)
	}
}
