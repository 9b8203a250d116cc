package gateway_test

import (
	"strings"
	"testing"
)

// /metrics answers whoever reaches the port: unless the operator asks for
// names (gateway.metrics.orchestrator_labels), it counts orchestrators as
// "orchestrator" and never lists them, in the quota series too.
func TestMetricsDoNotNameOrchestratorsByDefault(t *testing.T) {
	const alphaToken = "alpha-metrics-token-0123456789abcdef"
	cfg := "gateway:\n  api_key: " + ownerKey + "\n  mcp_http:\n    enabled: true\n    orchestrators:\n      - {name: alpha-tenant, key_env: ALPHA, tools: [status], quota: {send_per_minute: 2}}\n      - {name: beta-tenant, key_env: BETA, tools: [status], quota: {send_per_minute: 3}}\n"
	for _, tc := range []struct {
		extra, want string
		named       bool
	}{
		{"", `caller="orchestrator"`, false},
		{"  metrics: {orchestrator_labels: true}\n", `caller="alpha-tenant"`, true},
	} {
		h := start(t, strings.Replace(cfg, "  mcp_http:\n", tc.extra+"  mcp_http:\n", 1), map[string]string{"ALPHA": alphaToken, "BETA": "t" + alphaToken})
		for _, token := range []string{alphaToken, ownerKey} {
			if code, body := post(t, h.url, token, toolsList, nil); code != 200 {
				t.Fatalf("tools/list: %d %s", code, body)
			}
		}
		m := grep(metricsText(t, h.url), "garra_mcp_authentications_total")
		if !strings.Contains(m, `garra_mcp_authentications_total{auth="token",`+tc.want+`} 1`) ||
			!strings.Contains(m, `garra_mcp_authentications_total{auth="token",caller="owner"} 1`) {
			t.Errorf("orchestrator_labels %t, want %s and the owner:\n%s", tc.named, tc.want, m)
		}
		all := metricsText(t, h.url)
		if named := strings.Contains(all, "alpha-tenant"); named != tc.named {
			t.Errorf("orchestrator_labels %t: /metrics names the orchestrator: %t", tc.named, named)
		}
		quota := `garra_quota_remaining{orchestrator="orchestrator",quota="send_per_minute"} 2`
		if tc.named {
			quota = `garra_quota_remaining{orchestrator="beta-tenant",quota="send_per_minute"} 3`
		}
		if !strings.Contains(all, quota) {
			t.Errorf("orchestrator_labels %t, want %s:\n%s", tc.named, quota, grep(all, "garra_quota"))
		}
	}
}
