package controllers

import (
	"bytes"
	"strings"
	"testing"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/config"
)

// identityTestServer is testServer with badgood authenticating by its
// ServiceAccount and n8n-prod by OIDC.
func identityTestServer() *garrav1alpha1.GarraServer {
	gs := testServer()
	gs.Spec.Orchestrators[0].Auth = &garrav1alpha1.OrchestratorAuth{ServiceAccount: &garrav1alpha1.ServiceAccountAuth{Name: "badgood-sa"}}
	gs.Spec.Orchestrators[1].TokenSecretRef = nil
	gs.Spec.Orchestrators[1].Auth = &garrav1alpha1.OrchestratorAuth{OIDC: &garrav1alpha1.OIDCAuth{
		Issuer: "https://idp.example.com", Audience: "garra", Claims: map[string]string{"groups": "n8n"}}}
	return gs
}

func TestRenderConfigAuthModes(t *testing.T) {
	for _, tt := range []struct {
		name         string
		gs           func() *garrav1alpha1.GarraServer
		audience     string
		modes        []string
		keyFiles     int
		bearerSecret [2]bool // NAME-orch-O holds key token, per orchestrator
	}{
		{"token modes", testServer, "", []string{config.AuthToken, config.AuthToken}, 2, [2]bool{true, true}},
		{"explicit token mode", func() *garrav1alpha1.GarraServer {
			gs := testServer()
			gs.Spec.Orchestrators[0].Auth = &garrav1alpha1.OrchestratorAuth{Token: &garrav1alpha1.TokenAuth{}}
			return gs
		}, "", []string{config.AuthToken, config.AuthToken}, 2, [2]bool{true, true}},
		{"serviceAccount and oidc", identityTestServer, "http://team-a-gateway.agents.svc:3888/mcp",
			[]string{config.AuthServiceAccount, config.AuthOIDC}, 0, [2]bool{false, false}},
		{"an audience named in the spec", func() *garrav1alpha1.GarraServer {
			gs := identityTestServer()
			gs.Spec.Gateway.Audience = "https://garra.example.com/mcp"
			return gs
		}, "https://garra.example.com/mcp", []string{config.AuthServiceAccount, config.AuthOIDC}, 0, [2]bool{false, false}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			gs := tt.gs()
			c := RenderConfig(gs, inlineMembers(gs))
			if c.Gateway.Auth.Audience != tt.audience {
				t.Errorf("audience %q, want %q", c.Gateway.Auth.Audience, tt.audience)
			}
			keyFiles := 0
			for i, o := range c.Gateway.MCPHTTP.Orchestrators {
				if o.AuthMode() != tt.modes[i] {
					t.Errorf("%s: mode %s, want %s", o.Name, o.AuthMode(), tt.modes[i])
				}
				if o.KeyFile != "" {
					keyFiles++
				}
				if o.Sandbox == nil || o.Sandbox.TokenFile == "" {
					t.Errorf("%s: the sandbox token must stay whatever the mode", o.Name)
				}
				sec, err := orchestratorSecret(inlineMembers(gs)[i], bytes.NewReader(bytes.Repeat([]byte{1}, 256)))
				if err != nil {
					t.Fatal(err)
				}
				if _, has := sec.Data[KeyToken]; has != tt.bearerSecret[i] {
					t.Errorf("%s: Secret has key token = %t, want %t", o.Name, has, tt.bearerSecret[i])
				}
				if _, has := sec.Data[KeySandboxToken]; !has {
					t.Errorf("%s: Secret lost sandbox-token", o.Name)
				}
			}
			if keyFiles != tt.keyFiles {
				t.Errorf("%d key files, want %d", keyFiles, tt.keyFiles)
			}
			// What the operator checks: the file in the gateway pod, with
			// the pod's variables and files.
			y, err := RenderConfigYAML(gs, inlineMembers(gs))
			if err != nil {
				t.Fatal(err)
			}
			ps, err := configWarnings(y, gatewayPodEnv(gs), gatewayPodFiles(inlineMembers(gs)))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range ps {
				if strings.Contains(p.Field, "auth") || strings.Contains(p.Field, "key_") {
					t.Errorf("rendered config has a problem: %s", p)
				}
			}
			if sa := c.Gateway.MCPHTTP.Orchestrators[0].Auth; sa != nil && sa.ServiceAccount != nil && sa.ServiceAccount.Namespace != "agents" {
				t.Errorf("the ServiceAccount's namespace defaults to the GarraServer's: %+v", sa.ServiceAccount)
			}
			if needsTokenReview(inlineMembers(gs)) != (tt.modes[0] == config.AuthServiceAccount) {
				t.Errorf("needsTokenReview = %t", needsTokenReview(inlineMembers(gs)))
			}
		})
	}
}
