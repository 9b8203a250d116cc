package controllers

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// sandboxServiceAccount is m's sandbox ServiceAccount (NAME-sandbox-O
// inline): bound to no role, and its token is never mounted, so a shell in
// the sandbox has no API credential.
func sandboxServiceAccount(m member) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(m.sandboxName(), m.at.Namespace).
		WithLabels(m.labels()).
		WithOwnerReferences(m.at.ownerRefs()...).
		WithAutomountServiceAccountToken(false)
}
