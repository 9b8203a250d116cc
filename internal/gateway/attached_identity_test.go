package gateway_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/gateway"
)

// Two teams may both call their orchestrator ci: attached, each is
// NAMESPACE/NAME to the gateway, and that is who it is in what it is told,
// in the audit file, in the metrics and in its quota, never the bare name.
func TestTwoTeamsWithOneNameAreTwoCallers(t *testing.T) {
	const (
		teamA = "team-a-ci-token-0123456789abcdef0123"
		teamB = "team-b-ci-token-0123456789abcdef0123"
	)
	cfg := "gateway:\n  api_key: " + ownerKey + `
  metrics: {orchestrator_labels: true}
  mcp_http:
    enabled: true
    orchestrators:
      - {name: team-a/ci, key_env: TEAM_A_CI, tools: [status], quota: {send_per_minute: 2}}
      - {name: team-b/ci, key_env: TEAM_B_CI, tools: [status], quota: {send_per_minute: 3}}
`
	alog := audit.New(audit.Options{Path: filepath.Join(t.TempDir(), "audit.jsonl")})
	h := start(t, cfg, map[string]string{"TEAM_A_CI": teamA, "TEAM_B_CI": teamB}, func(o *gateway.Options) { o.Audit = alog })

	for _, c := range []struct{ token, id string }{{teamA, "team-a/ci"}, {teamB, "team-b/ci"}} {
		cs := client(t, h.url, c.token)
		if env, isErr := call(t, cs, "garra_status", nil); isErr || env["ok"] != true {
			t.Fatalf("%s: garra_status %v", c.id, env)
		}
		if policy := read(t, cs, "garra://policy"); policy["caller"] != c.id {
			raw, _ := json.Marshal(policy)
			t.Errorf("%s is told it is someone else: %s", c.id, raw)
		}
	}

	_, lines := auditLines(t, alog.Path())
	for _, id := range []string{"team-a/ci", "team-b/ci"} {
		if got := find(lines, map[string]any{"caller": id, "tool": "garra_status", "outcome": "ok"}); len(got) != 1 {
			t.Errorf("audit lines of %s: %d, want 1", id, len(got))
		}
	}
	if got := find(lines, map[string]any{"caller": "ci"}); len(got) != 0 {
		t.Errorf("audit lines under the bare name: %v", got)
	}

	m := metricsText(t, h.url)
	for _, want := range []string{
		`garra_mcp_authentications_total{auth="token",caller="team-a/ci"} `,
		`garra_mcp_authentications_total{auth="token",caller="team-b/ci"} `,
		`garra_quota_remaining{orchestrator="team-a/ci",quota="send_per_minute"} 2`,
		`garra_quota_remaining{orchestrator="team-b/ci",quota="send_per_minute"} 3`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s:\n%s", want, grep(m, "team-"))
		}
	}
	if strings.Contains(m, `="ci"`) {
		t.Errorf("a metric under the bare name:\n%s", grep(m, `="ci"`))
	}
}
