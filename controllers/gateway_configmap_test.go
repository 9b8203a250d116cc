package controllers

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/config"
)

func TestGatewayConfigMap(t *testing.T) {
	gs := testServer()
	yml, err := RenderConfigYAML(gs, inlineMembers(gs))
	if err != nil {
		t.Fatal(err)
	}
	cm := typed[corev1.ConfigMap](t, gatewayConfigMap(gs, yml))
	if cm.Name != "team-a-gateway" || cm.Namespace != "agents" {
		t.Errorf("name = %s/%s", cm.Namespace, cm.Name)
	}
	checkOwned(t, cm.ObjectMeta, gatewayLabels(), true)
	if len(cm.Data) != 1 || cm.Data["config.yml"] != yml {
		t.Errorf("data = %v", cm.Data)
	}
}

func TestRenderConfig(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*garrav1alpha1.GarraServer)
		check  func(*testing.T, *config.Config)
		// warn is a substring of the expected config warning; "" = none.
		warn string
	}{
		{
			name: "a shared PostgreSQL store, its DSN from the pod's environment",
			mutate: func(gs *garrav1alpha1.GarraServer) {
				gs.Spec.Gateway.Replicas = 2
				gs.Spec.Gateway.Store = garrav1alpha1.GatewayStoreSpec{Driver: garrav1alpha1.StorePostgres,
					DSNSecretRef: &garrav1alpha1.SecretKeySelector{Name: "pg", Key: "dsn"}}
			},
			check: func(t *testing.T, c *config.Config) {
				if c.Store != (config.Store{Driver: config.StorePostgres, DSNEnv: EnvStoreDSN}) {
					t.Errorf("store = %+v", c.Store)
				}
				if c.Gateway.HandoverSeconds != HandoverSeconds {
					t.Errorf("handover_seconds = %d, want %d among replicas", c.Gateway.HandoverSeconds, HandoverSeconds)
				}
			},
		},
		{
			name: "quotas: the gateway's default and an orchestrator's own, in the config's words",
			mutate: func(gs *garrav1alpha1.GarraServer) {
				i32 := func(v int32) *int32 { return &v }
				tokens := int64(200000)
				gs.Spec.Gateway.Quota = &garrav1alpha1.QuotaSpec{AskPerMinute: i32(5), LLMTokensPerDay: &tokens}
				gs.Spec.Orchestrators[0].Quota = &garrav1alpha1.QuotaSpec{AgentPerMinute: i32(1), SendPerMinute: i32(2), AgentConcurrent: i32(1)}
			},
			check: func(t *testing.T, c *config.Config) {
				m := c.Gateway.MCPHTTP
				if m.Quota == nil || *m.Quota != (config.Quota{AskPerMinute: 5, LLMTokensPerDay: 200000}) {
					t.Errorf("gateway quota = %+v", m.Quota)
				}
				if q := m.Orchestrators[0].Quota; q == nil || *q != (config.Quota{AgentPerMinute: 1, SendPerMinute: 2, AgentConcurrent: 1}) {
					t.Errorf("orchestrator quota = %+v", q)
				}
				if m.Orchestrators[1].Quota != nil {
					t.Errorf("an orchestrator without a quota rendered %+v", m.Orchestrators[1].Quota)
				}
				if got := m.QuotaFor(m.Orchestrators[0].Name); got != (config.Quota{AskPerMinute: 5, AgentPerMinute: 1, SendPerMinute: 2, AgentConcurrent: 1, LLMTokensPerDay: 200000}) {
					t.Errorf("quota in force = %+v", got)
				}
			},
		},
		{
			name: "sqlite renders no store section",
			check: func(t *testing.T, c *config.Config) {
				if c.Store != (config.Store{}) || c.Gateway.HandoverSeconds != 0 {
					t.Errorf("store = %+v, handover_seconds %d", c.Store, c.Gateway.HandoverSeconds)
				}
			},
		},
		{
			name: "two orchestrators",
			check: func(t *testing.T, c *config.Config) {
				if c.DataDir != "/var/lib/garra" || c.Gateway.Listen != "0.0.0.0:3888" {
					t.Errorf("data_dir %q, listen %q", c.DataDir, c.Gateway.Listen)
				}
				if c.Gateway.APIKey != "" || c.Gateway.APIKeyFile != "/var/run/garra/owner/api-key" {
					t.Errorf("api_key %q written into the file, or api_key_file %q not the mounted one", c.Gateway.APIKey, c.Gateway.APIKeyFile)
				}
				want := []string{"team-a-gateway", "team-a-gateway.agents", "team-a-gateway.agents.svc", "team-a-gateway.agents.svc.cluster.local"}
				if !slices.Equal(c.Gateway.AllowedHosts, want) {
					t.Errorf("allowed_hosts = %v", c.Gateway.AllowedHosts)
				}
				if c.LLM.Provider != "openrouter" || c.LLM.Model != "z-ai/glm-5.3-flash" || c.LLM.APIKeyEnv != "GARRA_LLM_API_KEY" {
					t.Errorf("llm = %+v", c.LLM)
				}
				m := c.Gateway.MCPHTTP
				if !m.Enabled || m.AllowSend || m.AllowAsk || !m.AllowAgent || m.MaxHistoryMessages != 50 || m.AskBudgetPerMinute != 10 ||
					m.AgentBudgetPerMinute != 2 || m.AgentMaxSeconds != 300 || !slices.Equal(m.RedactPatterns, []string{"corp-[0-9]{6}"}) {
					t.Errorf("mcp_http = %+v", m)
				}
				if c.Gateway.RateLimit.RequestsPerMinute != 120 {
					t.Errorf("rate_limit = %+v", c.Gateway.RateLimit)
				}
				if c.Gateway.DrainSeconds != 30 {
					t.Errorf("drain_seconds = %d, want the CRD default 30", c.Gateway.DrainSeconds)
				}
				if len(m.Orchestrators) != 2 {
					t.Fatalf("orchestrators = %+v", m.Orchestrators)
				}
				b, n := m.Orchestrators[0], m.Orchestrators[1]
				if b.Name != "badgood" || b.KeyFile != "/var/run/garra/tokens/badgood" || b.KeyEnv != "" || !slices.Equal(b.Tools, []string{"status", "agent"}) ||
					b.Sandbox == nil || b.Sandbox.URL != "http://team-a-sandbox-badgood.agents.svc:8080/mcp" ||
					b.Sandbox.TokenFile != "/var/run/garra/tokens/badgood.sandbox" || b.Sandbox.TokenEnv != "" {
					t.Errorf("badgood = %+v %+v", b, b.Sandbox)
				}
				if n.Name != "n8n-prod" || n.KeyFile != "/var/run/garra/tokens/n8n-prod" || !slices.Equal(n.Chats, []string{"telegram:42"}) ||
					n.Sandbox == nil || n.Sandbox.TokenFile != "/var/run/garra/tokens/n8n-prod.sandbox" {
					t.Errorf("n8n-prod = %+v %+v", n, n.Sandbox)
				}
				if c.Channels.Telegram.BotTokenEnv != "" || len(c.Channels.Telegram.ProactiveChatIDs) != 0 {
					t.Errorf("telegram = %+v", c.Channels.Telegram)
				}
			},
		},
		{
			name: "telegram with token, send allowed",
			mutate: func(gs *garrav1alpha1.GarraServer) {
				gs.Spec.Gateway.AllowSend = true
				gs.Spec.Channels = &garrav1alpha1.ChannelsSpec{Telegram: &garrav1alpha1.TelegramSpec{
					BotTokenSecretRef: &garrav1alpha1.SecretKeySelector{Name: "tg", Key: "token"},
					ProactiveChatIDs:  []string{"-1001234567890", "42"},
					Allowlist:         []string{"7"},
				}}
			},
			check: func(t *testing.T, c *config.Config) {
				tg := c.Channels.Telegram
				if tg.BotTokenEnv != "TELEGRAM_BOT_TOKEN" || !slices.Equal(tg.ProactiveChatIDs, []string{"-1001234567890", "42"}) || !slices.Equal(tg.Allowlist, []string{"7"}) {
					t.Errorf("telegram = %+v", tg)
				}
				if !c.Gateway.MCPHTTP.AllowSend {
					t.Error("allow_send not rendered")
				}
			},
		},
		{
			name: "ollama without key, no orchestrators, undefaulted knobs",
			mutate: func(gs *garrav1alpha1.GarraServer) {
				gs.Spec.LLM = garrav1alpha1.LLMSpec{Provider: garrav1alpha1.ProviderOllama, BaseURL: "http://ollama:11434"}
				gs.Spec.Gateway = garrav1alpha1.GatewaySpec{}
				gs.Spec.Orchestrators = nil
			},
			check: func(t *testing.T, c *config.Config) {
				if c.LLM.APIKeyEnv != "" || c.LLM.BaseURL != "http://ollama:11434" || c.LLM.Provider != "ollama" {
					t.Errorf("llm = %+v", c.LLM)
				}
				if m := c.Gateway.MCPHTTP; !m.Enabled || m.AgentMaxSeconds != 0 || len(m.Orchestrators) != 0 {
					t.Errorf("mcp_http = %+v (zero knobs must be left to the gateway's defaults)", m)
				}
			},
		},
		{
			name: "deny tools and web search",
			mutate: func(gs *garrav1alpha1.GarraServer) {
				gs.Spec.Orchestrators[0].DenyTools = []garrav1alpha1.Tool{garrav1alpha1.ToolAgent}
				gs.Spec.Gateway.WebSearch = &garrav1alpha1.WebSearchSpec{
					APIKeySecretRef: garrav1alpha1.SecretKeySelector{Name: "brave", Key: "key"},
					BaseURL:         "http://brave-proxy:8080",
				}
			},
			check: func(t *testing.T, c *config.Config) {
				if b := c.Gateway.MCPHTTP.Orchestrators[0]; !slices.Equal(b.DenyTools, []string{"agent"}) || !slices.Equal(b.Tools, []string{"status", "agent"}) {
					t.Errorf("badgood tools %v deny_tools %v", b.Tools, b.DenyTools)
				}
				if n := c.Gateway.MCPHTTP.Orchestrators[1]; n.DenyTools != nil {
					t.Errorf("n8n-prod deny_tools %v", n.DenyTools)
				}
				if c.LLM.Brave.APIKey != "" || c.LLM.Brave.BaseURL != "http://brave-proxy:8080" {
					t.Errorf("brave = %+v (the key must not be in the file)", c.LLM.Brave)
				}
			},
		},
		{
			name:   "agent listed while allowAgent is off",
			mutate: func(gs *garrav1alpha1.GarraServer) { gs.Spec.Gateway.AllowAgent = false },
			warn:   "lists agent but gateway.mcp_http.allow_agent is false",
		},
		{
			name:   "redact pattern that does not compile",
			mutate: func(gs *garrav1alpha1.GarraServer) { gs.Spec.Gateway.RedactPatterns = []string{"("} },
			warn:   "gateway.mcp_http.redact_patterns",
		},
		{
			name: "web_fetch allowed hosts",
			mutate: func(gs *garrav1alpha1.GarraServer) {
				gs.Spec.Gateway.WebFetchAllowedHosts = []string{"metrics-exporter.monitoring.svc:9100", "10.0.0.5"}
			},
			check: func(t *testing.T, c *config.Config) {
				if got := c.Gateway.MCPHTTP.WebFetchAllowedHosts; !slices.Equal(got, []string{"metrics-exporter.monitoring.svc:9100", "10.0.0.5"}) {
					t.Errorf("web_fetch_allowed_hosts = %v", got)
				}
			},
		},
		{
			name: "web_fetch allowed host that is a URL",
			mutate: func(gs *garrav1alpha1.GarraServer) {
				gs.Spec.Gateway.WebFetchAllowedHosts = []string{"http://intranet/"}
			},
			warn: "gateway.mcp_http.web_fetch_allowed_hosts[0]",
		},
		{
			name: "redact pattern that matches the empty string",
			mutate: func(gs *garrav1alpha1.GarraServer) {
				gs.Spec.Gateway.RedactPatterns = []string{"corp-[0-9]{6}", "[0-9]*"}
			},
			warn: "gateway.mcp_http.redact_patterns[1]: redact pattern 1 skipped: matches the empty string",
		},
		{
			name:   "a router as the default model",
			mutate: func(gs *garrav1alpha1.GarraServer) { gs.Spec.LLM.Model = "openrouter/auto" },
			warn:   `llm.model: "openrouter/auto" is a router`,
		},
		{
			name:   "openrouter without a key",
			mutate: func(gs *garrav1alpha1.GarraServer) { gs.Spec.LLM.APIKeySecretRef = nil },
			warn:   "llm.api_key_env: OPENROUTER_API_KEY is not set",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gs := testServer()
			if tc.mutate != nil {
				tc.mutate(gs)
			}
			yml, err := RenderConfigYAML(gs, inlineMembers(gs))
			if err != nil {
				t.Fatal(err)
			}
			// The gateway parses strictly: an unknown key would be an error.
			c, err := config.Parse([]byte(yml))
			if err != nil {
				t.Fatalf("config.Parse: %v\n%s", err, yml)
			}
			if tc.check != nil {
				tc.check(t, c)
			}
			problems, err := configWarnings(yml, gatewayPodEnv(gs), gatewayPodFiles(inlineMembers(gs)))
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.warn == "" && len(problems) > 0:
				t.Errorf("config check problems: %v\n%s", problems, yml)
			case tc.warn != "":
				found := false
				for _, p := range problems {
					found = found || strings.Contains(p.String(), tc.warn)
				}
				if !found {
					t.Errorf("problems %v lack %q", problems, tc.warn)
				}
			}
		})
	}
}

// The rendered config names exactly the files the pod mounts: a file left
// out of the volume is a warning naming its key.
func TestConfigWarningsNameUnmountedFiles(t *testing.T) {
	gs := testServer()
	yml, err := RenderConfigYAML(gs, inlineMembers(gs))
	if err != nil {
		t.Fatal(err)
	}
	files := gatewayPodFiles(inlineMembers(gs))
	for i, f := range files {
		less := slices.Delete(slices.Clone(files), i, i+1)
		problems, err := configWarnings(yml, gatewayPodEnv(gs), less)
		if err != nil {
			t.Fatal(err)
		}
		if len(problems) != 1 || !strings.Contains(problems[0].Message, f+" is not mounted") ||
			!strings.HasSuffix(problems[0].Field, "_file") {
			t.Errorf("without %s: problems %v", f, problems)
		}
	}
}

// The quota on the status is the one the gateway enforces: each case is
// also rendered and asked of the gateway's own config (QuotaFor).
func TestEffectiveQuota(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	i64 := func(v int64) *int64 { return &v }
	tests := []struct {
		name     string
		def, own *garrav1alpha1.QuotaSpec
		want     *garrav1alpha1.QuotaSpec
	}{
		{"neither: unlimited, absent", nil, nil, nil},
		{"empty both: unlimited, absent", &garrav1alpha1.QuotaSpec{}, &garrav1alpha1.QuotaSpec{}, nil},
		{"the default alone", &garrav1alpha1.QuotaSpec{AskPerMinute: i32(10), LLMTokensPerDay: i64(100000)}, nil,
			&garrav1alpha1.QuotaSpec{AskPerMinute: i32(10), LLMTokensPerDay: i64(100000)}},
		{"its own alone", nil, &garrav1alpha1.QuotaSpec{AgentConcurrent: i32(2)},
			&garrav1alpha1.QuotaSpec{AgentConcurrent: i32(2)}},
		{"its own over the default, field by field",
			&garrav1alpha1.QuotaSpec{AskPerMinute: i32(10), AgentPerMinute: i32(2), SendPerMinute: i32(5), LLMTokensPerDay: i64(100000)},
			&garrav1alpha1.QuotaSpec{AskPerMinute: i32(3), AgentConcurrent: i32(1), LLMTokensPerDay: i64(5000)},
			&garrav1alpha1.QuotaSpec{AskPerMinute: i32(3), AgentPerMinute: i32(2), SendPerMinute: i32(5), AgentConcurrent: i32(1), LLMTokensPerDay: i64(5000)}},
		{"its own larger than the default still wins", &garrav1alpha1.QuotaSpec{AgentPerMinute: i32(1)}, &garrav1alpha1.QuotaSpec{AgentPerMinute: i32(50)},
			&garrav1alpha1.QuotaSpec{AgentPerMinute: i32(50)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := effectiveQuota(tc.def, tc.own)
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("effectiveQuota = %s, want %s", quotaString(got), quotaString(tc.want))
			}
			gs := testServer()
			gs.Spec.Gateway.Quota = tc.def
			gs.Spec.Orchestrators[0].Quota = tc.own
			enforced := RenderConfig(gs, inlineMembers(gs)).Gateway.MCPHTTP.QuotaFor(gs.Spec.Orchestrators[0].Name)
			if shown := ptr.Deref(renderQuota(got), config.Quota{}); shown != enforced {
				t.Errorf("the status shows %+v, the gateway enforces %+v", shown, enforced)
			}
		})
	}
}

func quotaString(q *garrav1alpha1.QuotaSpec) string {
	if q == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%+v", ptr.Deref(renderQuota(q), config.Quota{}))
}
