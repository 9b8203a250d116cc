package config

import (
	"slices"
	"strings"
	"testing"
)

func TestQuotaCheckNamesTheField(t *testing.T) {
	env := map[string]string{"K": longToken, "OPENROUTER_API_KEY": "k"}
	for _, tt := range []struct {
		name, yaml string
		fields     []string
	}{
		{"none", "gateway: {mcp_http: {orchestrators: [{name: a, key_env: K}]}}", nil},
		{"default and own", "gateway: {mcp_http: {quota: {ask_per_minute: 5, llm_tokens_per_day: 100000}, orchestrators: [{name: a, key_env: K, quota: {agent_concurrent: 1, send_per_minute: 2, agent_per_minute: 1}}]}}", nil},
		{"negative default", "gateway: {mcp_http: {quota: {ask_per_minute: -1, llm_tokens_per_day: -5}}}",
			[]string{"gateway.mcp_http.quota.ask_per_minute", "gateway.mcp_http.quota.llm_tokens_per_day"}},
		{"negative own", "gateway: {mcp_http: {orchestrators: [{name: a, key_env: K, quota: {agent_concurrent: -2, agent_per_minute: -1, send_per_minute: -3}}]}}",
			[]string{"gateway.mcp_http.orchestrators[a].quota.agent_per_minute", "gateway.mcp_http.orchestrators[a].quota.send_per_minute", "gateway.mcp_http.orchestrators[a].quota.agent_concurrent"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			cfg.applyDefaults()
			var got []string
			for _, p := range cfg.Check(func(k string) string { return env[k] }) {
				if !strings.Contains(p.Message, "at least 1") && strings.Contains(p.Field, "quota") {
					t.Errorf("%s: %q does not say the bound", p.Field, p.Message)
				}
				got = append(got, p.Field)
			}
			if !slices.Equal(got, tt.fields) {
				t.Fatalf("problems %v, want %v", got, tt.fields)
			}
		})
	}
}

func TestUnknownQuotaFieldIsRefused(t *testing.T) {
	if _, err := Parse([]byte("gateway: {mcp_http: {orchestrators: [{name: a, quota: {asks_per_minute: 1}}]}}")); err == nil {
		t.Fatal("a misspelt quota field was accepted")
	}
}

// An orchestrator's own fields win; those it leaves out come from the
// gateway's default; those left out at both are unlimited (0).
func TestQuotaFor(t *testing.T) {
	cfg, err := Parse([]byte(`gateway: {mcp_http: {quota: {ask_per_minute: 5, agent_concurrent: 2, llm_tokens_per_day: 1000},
  orchestrators: [{name: a, quota: {ask_per_minute: 1, llm_tokens_per_day: 50}}, {name: b}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	m := cfg.Gateway.MCPHTTP
	if got, want := m.QuotaFor("a"), (Quota{AskPerMinute: 1, AgentConcurrent: 2, LLMTokensPerDay: 50}); got != want {
		t.Errorf("a: %+v, want %+v", got, want)
	}
	if got, want := m.QuotaFor("b"), (Quota{AskPerMinute: 5, AgentConcurrent: 2, LLMTokensPerDay: 1000}); got != want {
		t.Errorf("b: %+v, want %+v", got, want)
	}
	if !(MCPHTTP{}).QuotaFor("a").IsZero() {
		t.Error("no quota anywhere is not unlimited")
	}
}
