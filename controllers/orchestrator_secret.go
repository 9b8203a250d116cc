package controllers

import (
	"io"

	corev1 "k8s.io/api/core/v1"
)

// orchestratorSecret is m's generated Secret (NAME-orch-O inline, O-token
// attached, in m's namespace) with token (the orchestrator's bearer for
// the gateway) and sandbox-token (the gateway's bearer for the sandbox).
// token is generated even when the orchestrator brings its own, so
// dropping tokenSecretRef later needs no rewrite; the gateway does not
// accept it while tokenSecretRef is set. An orchestrator that
// authenticates with a ServiceAccount or OIDC gets no token: the Secret
// holds only sandbox-token, which the gateway still needs for the sandbox
// pod whatever the caller's mode.
func orchestratorSecret(m member, rand io.Reader) (*corev1.Secret, error) {
	keys := []string{KeyToken, KeySandboxToken}
	if !usesToken(m.OrchestratorSettings) {
		keys = keys[1:]
	}
	return generatedSecret(m.at, m.orchSecretName(), m.labels(), rand, keys...)
}
