package controllers

import (
	"strings"
	"testing"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// Two orchestrators naming one token, or one naming the owner key, are
// refused from the spec alone; equal tokens in different Secrets once the
// values are read. The message names the references, never a token.
func TestSharedTokenProblem(t *testing.T) {
	byo := func(name, key string) *garrav1alpha1.SecretKeySelector {
		return &garrav1alpha1.SecretKeySelector{Name: name, Key: key}
	}
	tests := []struct {
		name   string
		mutate func(*garrav1alpha1.GarraServer)
		values map[string][]byte
		want   string // substring; "" = none
	}{
		{"generated tokens", nil, nil, ""},
		{"one Secret key for two", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].TokenSecretRef = byo("shared", "token")
			gs.Spec.Orchestrators[1].TokenSecretRef = byo("shared", "token")
		}, nil, "spec.orchestrators[n8n-prod].tokenSecretRef: shared/token holds the same token as orchestrator badgood"},
		{"the owner key's Secret key", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.APIKeySecretRef = byo("owner", "key")
			gs.Spec.Orchestrators[1].TokenSecretRef = byo("owner", "key")
		}, nil, "spec.orchestrators[n8n-prod].tokenSecretRef: owner/key holds the gateway's owner key"},
		{"equal values in two Secrets", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].TokenSecretRef = byo("a", "token")
			gs.Spec.Orchestrators[1].TokenSecretRef = byo("b", "token")
		}, map[string][]byte{"a/token": []byte("tok-123\n"), "b/token": []byte("tok-123")}, "holds the same token as orchestrator badgood (a/token)"},
		{"a value equal to the generated owner key", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].TokenSecretRef = byo("a", "token")
		}, map[string][]byte{"a/token": []byte("owner-777"), "team-a-gateway/api-key": []byte("owner-777")}, "holds the gateway's owner key"},
		{"different values", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].TokenSecretRef = byo("a", "token")
			gs.Spec.Orchestrators[1].TokenSecretRef = byo("b", "token")
		}, map[string][]byte{"a/token": []byte("tok-1"), "b/token": []byte("tok-2"), "c/x": nil}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gs := testServer()
			if tc.mutate != nil {
				tc.mutate(gs)
			}
			got := sharedTokenProblem(gs, tc.values)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("sharedTokenProblem = %q, want %q", got, tc.want)
			}
			for _, v := range tc.values {
				if len(v) > 0 && strings.Contains(got, strings.TrimSpace(string(v))) {
					t.Errorf("the message holds a token: %q", got)
				}
			}
			if tc.values == nil {
				if spec := invalidSpec(gs, "g", "s"); spec != got {
					t.Errorf("invalidSpec = %q, want the same refusal", spec)
				}
			}
		})
	}
}
