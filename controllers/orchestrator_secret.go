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
// gateway does not accept it while tokenSecretRef is set.
func orchestratorSecret(gs *garrav1alpha1.GarraServer, o string, rand io.Reader) (*corev1.Secret, error) {
	return generatedSecret(gs, orchSecretName(gs, o), ComponentSandbox, o, rand, KeyToken, KeySandboxToken)
}
