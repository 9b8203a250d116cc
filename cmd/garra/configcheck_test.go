package main

import (
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

	out, _, code = run(t, testEnv(t, "GARRAIA_GATEWAY_API_KEY=k", "BADGOOD_MCP_KEY=t"), "config", "check", "--config", writeConfig(t, "ollama", "http://127.0.0.1:11434/v1"))
	if code != 0 || !strings.HasPrefix(out, "config ok") {
		t.Fatalf("exit %d out %q", code, out)
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
