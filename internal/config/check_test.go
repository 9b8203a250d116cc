package config

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	env := map[string]string{"BADGOOD_MCP_KEY": "tok", "SBX": "s"}
	tests := []struct {
		name   string
		yaml   string
		fields []string // fields with a problem, in order
	}{
		{"defaults are clean", "", nil},
		{"enabled without key", "gateway: {mcp_http: {enabled: true}}", []string{"gateway.mcp_http.enabled"}},
		{"enabled with key", "gateway: {api_key: k, mcp_http: {enabled: true}}", nil},
		{"allow_send without destinations", "gateway: {mcp_http: {allow_send: true}}", []string{"gateway.mcp_http.allow_send"}},
		{"allow_send with destinations", "gateway: {mcp_http: {allow_send: true}}\nchannels: {telegram: {proactive_chat_ids: ['-100123']}}", nil},
		{"bad chat id", "channels: {telegram: {proactive_chat_ids: ['abc']}}", []string{"channels.telegram.proactive_chat_ids[0]"}},
		{"agent_max_seconds low", "gateway: {mcp_http: {agent_max_seconds: 4}}", []string{"gateway.mcp_http.agent_max_seconds"}},
		{"agent_max_seconds high", "gateway: {mcp_http: {agent_max_seconds: 601}}", []string{"gateway.mcp_http.agent_max_seconds"}},
		{"bad redact pattern", "gateway: {mcp_http: {redact_patterns: ['(unclosed']}}", []string{"gateway.mcp_http.redact_patterns"}},
		{"bad provider", "llm: {provider: gemini}", []string{"llm.provider"}},
		{"bad profile", "execution: {profile: laptop}", []string{"execution.profile"}},
		{"bad sandbox", "agent: {sandbox: {mode: some, backend: lxc}}", []string{"agent.sandbox.mode", "agent.sandbox.backend"}},
		{"orchestrator ok", "gateway: {mcp_http: {allow_agent: true, orchestrators: [{name: badgood, key_env: BADGOOD_MCP_KEY, tools: [status, agent], sandbox: {url: 'http://x:8080/mcp', token_env: SBX}}]}}", nil},
		{"orchestrator nome alias", "gateway: {mcp_http: {orchestrators: [{nome: badgood, key_env: BADGOOD_MCP_KEY}]}}", nil},
		{"orchestrator key unset", "gateway: {mcp_http: {orchestrators: [{name: n8n, key_env: N8N_KEY}]}}", []string{"gateway.mcp_http.orchestrators[n8n].key_env"}},
		{"orchestrator problems", "gateway: {mcp_http: {orchestrators: [{name: Bad_Name, tools: [shell, agent], sandbox: {url: 'ftp://x'}}]}}",
			[]string{"gateway.mcp_http.orchestrators[Bad_Name].name", "gateway.mcp_http.orchestrators[Bad_Name].key_env",
				"gateway.mcp_http.orchestrators[Bad_Name].tools", "gateway.mcp_http.orchestrators[Bad_Name].tools",
				"gateway.mcp_http.orchestrators[Bad_Name].sandbox.url", "gateway.mcp_http.orchestrators[Bad_Name].sandbox.token_env"}},
		{"orchestrator named owner", "gateway: {mcp_http: {orchestrators: [{name: owner, key_env: BADGOOD_MCP_KEY}]}}", []string{"gateway.mcp_http.orchestrators[owner].name"}},
		{"orchestrator nome owner", "gateway: {mcp_http: {orchestrators: [{nome: owner, key_env: BADGOOD_MCP_KEY}]}}", []string{"gateway.mcp_http.orchestrators[owner].name"}},
		{"deny_tools ok", "gateway: {mcp_http: {orchestrators: [{name: a, key_env: BADGOOD_MCP_KEY, tools: [status, ask], deny_tools: [ask, agent]}]}}", nil},
		{"deny_tools unknown", "gateway: {mcp_http: {orchestrators: [{name: a, key_env: BADGOOD_MCP_KEY, deny_tools: [shell]}]}}", []string{"gateway.mcp_http.orchestrators[a].deny_tools"}},
		{"duplicate orchestrators", "gateway: {mcp_http: {orchestrators: [{name: a, key_env: BADGOOD_MCP_KEY}, {name: a, key_env: BADGOOD_MCP_KEY}]}}", []string{"gateway.mcp_http.orchestrators[a].name"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			cfg.applyDefaults()
			var got []string
			for _, p := range cfg.Check(func(k string) string { return env[k] }) {
				if p.Message == "" {
					t.Errorf("empty message for %s", p.Field)
				}
				got = append(got, p.Field)
			}
			if strings.Join(got, "|") != strings.Join(tt.fields, "|") {
				t.Fatalf("problems %v, want %v", cfg.Check(func(k string) string { return env[k] }), tt.fields)
			}
		})
	}
}

func TestReservedOrchestratorNames(t *testing.T) {
	for _, tt := range []struct {
		name string
		want bool
	}{{"owner", true}, {"owners", false}, {"n8n", false}, {"", false}} {
		if got := OrchestratorNameReserved(tt.name); got != tt.want {
			t.Errorf("OrchestratorNameReserved(%q) = %v", tt.name, got)
		}
	}
	cfg, err := Parse([]byte("gateway: {mcp_http: {orchestrators: [{name: owner, key_env: K}]}}"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.applyDefaults()
	ps := cfg.Check(func(string) string { return "set" })
	if len(ps) != 1 || !strings.Contains(ps[0].Message, `"owner" is reserved`) {
		t.Fatalf("problems %v", ps)
	}
}

func TestOrchestratorNomeConflicts(t *testing.T) {
	if _, err := Parse([]byte("gateway: {mcp_http: {orchestrators: [{name: a, nome: b, key_env: K}]}}")); err == nil {
		t.Fatal("name and nome that differ must be an error")
	}
	if _, err := Parse([]byte("gateway: {mcp_http: {orchestrators: [{name: a, key_env: K, colour: red}]}}")); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Fatalf("unknown orchestrator key: %v", err)
	}
}
