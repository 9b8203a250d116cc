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
	if code != 1 || len(lines) != 5 || !strings.Contains(errOut, "3 error(s), 1 disabled, 1 warning(s)") || !strings.Contains(errOut, "the gateway refuses this config") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr: %s", code, out, errOut)
	}
	// The LLM key is only a warning: nothing this gateway enables calls the model.
	for i, want := range []string{"warning: llm.api_key_env: OPENROUTER_API_KEY is not set", "gateway.mcp_http.enabled:", "gateway.mcp_http.allow_send:", "gateway.mcp_http.agent_max_seconds:", "disabled: gateway.mcp_http.orchestrators[badgood].key_env: BADGOOD_MCP_KEY is not set"} {
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
// with a disabled part beside it the exit is 3 (the gateway runs it, less
// that part).
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
	if code != 3 || !strings.Contains(out, "warning: llm.model:") || !strings.HasPrefix(out, "disabled: llm.api_key_env: OPENROUTER_API_KEY is not set") ||
		!strings.Contains(errOut, "0 error(s), 1 disabled, 1 warning(s) in") {
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
	if code != 3 || !strings.HasPrefix(out, "disabled: gateway.mcp_http.orchestrators[robot].auth.service_account: the API server at "+dead.URL+" is not reachable") {
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

// One file, one verdict: what config check calls an error the gateway
// refuses to start with, and what it calls disabled the gateway starts
// with, logging the same problem line under the same severity.
func TestConfigVerdictIsTheGateways(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := "data_dir: " + dir + "\nllm: {provider: ollama, model: llama3.2}\ngateway:\n  listen: 127.0.0.1:0\n  mcp_http:\n    enabled: true\n    orchestrators:\n"
	const pad = "-0123456789abcdef" // 32 bytes and more, as check wants
	env := testEnv(t, "GARRAIA_GATEWAY_API_KEY=owner-key-0123456789"+pad, "A_KEY=token-a-0123456789"+pad, "B_KEY=token-a-0123456789"+pad, "O_KEY=owner-key-0123456789"+pad)
	for _, tc := range []struct {
		name, body string
		code       int
		line       string
	}{
		{"shared token", base + "      - {name: a, key_env: A_KEY}\n      - {name: b, key_env: B_KEY}\n", 1,
			`gateway.mcp_http.orchestrators[b].key_env: holds the same token as orchestrator "a"`},
		{"the owner's key", base + "      - {name: o, key_env: O_KEY}\n", 1,
			"gateway.mcp_http.orchestrators[o].key_env: holds the owner's key"},
		{"base_url not a URL", strings.Replace(base, "model: llama3.2}", "model: llama3.2, base_url: 'localhost:11434'}", 1), 1,
			`llm.base_url: "localhost:11434" is not an http(s) URL`},
		{"listen without a port", strings.Replace(base, "127.0.0.1:0", "127.0.0.1", 1), 1,
			`gateway.listen: "127.0.0.1" is not host:port`},
		{"a token unset", base + "      - {name: a, key_env: A_KEY}\n      - {name: c, key_env: C_KEY}\n", 3,
			"disabled: gateway.mcp_http.orchestrators[c].key_env: C_KEY is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := write(strings.ReplaceAll(tc.name, " ", "-")+".yml", tc.body)
			out, errOut, code := run(t, env, "config", "check", "--config", p)
			if code != tc.code || !strings.Contains(out, tc.line+"") {
				t.Fatalf("config check: exit %d, want %d with %q\n%s%s", code, tc.code, tc.line, out, errOut)
			}
			if strings.Contains(out, "token-a-0123456789") || strings.Contains(out, "owner-key-0123456789") {
				t.Fatal("config check printed a token")
			}
			problem := strings.TrimPrefix(tc.line, "disabled: ")
			if tc.code == checkExitRefused {
				_, errOut, code := run(t, env, "gateway", "--config", p)
				if code != 1 || !strings.Contains(errOut, `level=ERROR msg="config problem" severity=error problem=`) ||
					!strings.Contains(strings.ReplaceAll(errOut, `\"`, `"`), problem) || strings.Contains(errOut, "garra gateway listening") {
					t.Fatalf("gateway: exit %d, want 1 refusing with %q:\n%s", code, problem, errOut)
				}
				return
			}
			_, logs := startChild(t, dir, env, gatewayListeningLine, "gateway", "--config", p)
			if got := logs.String(); !strings.Contains(got, `severity=disabled problem=`) || !strings.Contains(got, problem) {
				t.Fatalf("gateway started without logging %q as disabled:\n%s", problem, got)
			}
			// The limits a caller will meet are said before the first 429.
			if got := logs.String(); !strings.Contains(got, `msg="limits in force" requests_per_minute_per_address=120 ask_budget_per_minute=10 agent_budget_per_minute=2 send_budget_per_minute=5 agent_max_seconds=300`) {
				t.Fatalf("no limits line:\n%s", got)
			}
		})
	}
}
