package controllers

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// sandboxServiceAccount is NAME-sandbox-O: bound to no role, and its token
// is never mounted, so a shell in the sandbox has no API credential.
func sandboxServiceAccount(gs *garrav1alpha1.GarraServer, o string) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(sandboxName(gs, o), gs.Namespace).
		WithLabels(labels(gs, ComponentSandbox, o)).
		WithOwnerReferences(ownerRefs(gs)...).
		WithAutomountServiceAccountToken(false)
}
