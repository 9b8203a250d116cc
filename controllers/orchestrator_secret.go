package controllers

import (
	"io"

	corev1 "k8s.io/api/core/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// orchestratorSecret is NAME-orch-O with a generated token (the
// orchestrator's bearer for the gateway) and sandbox-token (the gateway's
// bearer for the sandbox). token is generated even when the orchestrator
// brings its own, so dropping tokenSecretRef later needs no rewrite; the
// gateway does not accept it while tokenSecretRef is set. An orchestrator
// that authenticates with a ServiceAccount or OIDC gets no token: the
// Secret holds only sandbox-token, which the gateway still needs for the
// sandbox pod whatever the caller's mode.
func orchestratorSecret(gs *garrav1alpha1.GarraServer, o string, rand io.Reader) (*corev1.Secret, error) {
	keys := []string{KeyToken, KeySandboxToken}
	for _, spec := range gs.Spec.Orchestrators {
		if spec.Name == o && !usesToken(spec) {
			keys = keys[1:]
		}
	}
	return generatedSecret(gs, orchSecretName(gs, o), ComponentSandbox, o, rand, keys...)
}
