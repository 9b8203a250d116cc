package mcppolicy

import (
	"slices"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/config"
)

func TestStdioFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Stdio
		wantErr string
	}{
		{"unset", nil, Stdio{}, ""},
		{"allowlist trimmed", map[string]string{EnvModelAllowlist: " a/b , ,c "}, Stdio{ModelAllowlist: []string{"a/b", "c"}}, ""},
		{"cap", map[string]string{EnvMaxTimeoutSecs: "30"}, Stdio{MaxTimeoutSecs: 30}, ""},
		{"bad cap", map[string]string{EnvMaxTimeoutSecs: "30s"}, Stdio{}, EnvMaxTimeoutSecs},
		{"zero cap", map[string]string{EnvMaxTimeoutSecs: "0"}, Stdio{}, EnvMaxTimeoutSecs},
		{"tools YES", map[string]string{EnvEnableTools: "YES"}, Stdio{EnableTools: true}, ""},
		{"tools True", map[string]string{EnvEnableTools: "True"}, Stdio{EnableTools: true}, ""},
		{"tools 1", map[string]string{EnvEnableTools: "1"}, Stdio{EnableTools: true}, ""},
		{"tools on is not truthy", map[string]string{EnvEnableTools: "on"}, Stdio{}, ""},
		{"tools 0", map[string]string{EnvEnableTools: "0"}, Stdio{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := StdioFromEnv(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got.String() != tt.want.String() {
				t.Fatalf("got %v (%v), want %v", got, err, tt.want)
			}
		})
	}
}

func TestGatewayLimits(t *testing.T) {
	cfg, err := config.Parse([]byte(`gateway:
  mcp_http:
    allow_send: true
    allow_agent: true
    ask_allowed_models: [m1]
    agent_max_seconds: 90
    max_history_messages: 7
llm: {provider: ollama, model: m0}
channels: {telegram: {proactive_chat_ids: ['1', '2']}}
`))
	if err != nil {
		t.Fatal(err)
	}
	l := GatewayLimits(cfg)
	if !l.AllowSend || l.SendDestinations != 2 || l.AllowAsk || !l.AllowAgent || !slices.Equal(l.AskAllowedModels, []string{"m1"}) ||
		l.AgentMaxSeconds != 90 || l.MaxHistoryMessages != 7 || l.DefaultProvider != "ollama" || l.DefaultModel != "m0" || !l.HasAgent {
		t.Fatalf("limits %+v", l)
	}
	if d := (Limits{}).WithDefaults(); d.DefaultProvider != config.DefaultProvider || d.DefaultModel != config.DefaultModel {
		t.Fatalf("project defaults %+v", d)
	}
	if got := AllowedModels(Limits{DefaultModel: "m0"}); !slices.Equal(got, []string{"m0"}) {
		t.Fatalf("no list: the default alone, got %v", got)
	}
}

func TestOrchestratorCaller(t *testing.T) {
	c := OrchestratorCaller(config.Orchestrator{Name: "n8n", Tools: []string{"status", "agent", "bogus"}, DenyTools: []string{"agent"}, Chats: []string{"1"}})
	if c.Kind != Orchestrator || c.Name != "n8n" || !slices.Equal(c.Grants, []string{ToolStatus, ToolAgent}) ||
		!slices.Equal(c.Denied, []string{ToolAgent}) || !slices.Equal(c.Chats, []string{"1"}) || c.Auth != "token" {
		t.Fatalf("caller %+v", c)
	}
	if o := OwnerCaller(); !o.IsOwner() || o.Name != OwnerName || !o.OnGateway() {
		t.Fatalf("owner %+v", o)
	}
	if l := LocalUser(); l.OnGateway() || l.IsOwner() || l.Name != "local" {
		t.Fatalf("local %+v", l)
	}
}
