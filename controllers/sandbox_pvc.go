package controllers

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// workspaceClaim is m's workspace (NAME-ws-O inline). A retained
// workspace carries no owner reference: deleting its owner does not
// cascade to it, removing m keeps it, and an orchestrator of the same name
// adopts it again.
func workspaceClaim(m member) *corev1ac.PersistentVolumeClaimApplyConfiguration {
	return claim(m.workspaceName(), m.at, m.labels(), m.Workspace.StorageSpec, !m.Workspace.Retain)
}
