package controllers

import (
	"slices"
	"testing"
)

func TestNames(t *testing.T) {
	gs := testServer()
	for _, tc := range []struct{ got, want string }{
		{gatewayName(gs), "team-a-gateway"},
		{gatewayDataName(gs), "team-a-gateway-data"},
		{orchSecretName(gs, "badgood"), "team-a-orch-badgood"},
		{workspaceName(gs, "badgood"), "team-a-ws-badgood"},
		{sandboxName(gs, "badgood"), "team-a-sandbox-badgood"},
		{tokensName(gs), "team-a-gateway-tokens"},
		{APIKeyFile(), "/var/run/garra/owner/api-key"},
		{OrchTokenFile("n8n-prod"), "/var/run/garra/tokens/n8n-prod"},
		{SandboxTokenFile("n8n-prod"), "/var/run/garra/tokens/n8n-prod.sandbox"},
		{SandboxTokenPath, "/var/run/garra/sandbox-token"},
		{Endpoint(gs), "http://team-a-gateway.agents.svc:3888/mcp"},
		{SandboxURL(gs, "badgood"), "http://team-a-sandbox-badgood.agents.svc:8080/mcp"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	want := []string{"team-a-gateway", "team-a-gateway.agents", "team-a-gateway.agents.svc", "team-a-gateway.agents.svc.cluster.local"}
	if got := GatewayHosts(gs); !slices.Equal(got, want) {
		t.Errorf("GatewayHosts = %v, want %v", got, want)
	}
}
