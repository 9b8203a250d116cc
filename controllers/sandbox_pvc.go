package controllers

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// workspaceClaim is NAME-ws-O, orchestrator o's workspace. A retained
// workspace carries no owner reference: deleting the GarraServer does not
// cascade to it, removing o from the spec keeps it, and an orchestrator of
// the same name adopts it again.
func workspaceClaim(gs *garrav1alpha1.GarraServer, o garrav1alpha1.OrchestratorSpec) *corev1ac.PersistentVolumeClaimApplyConfiguration {
	return claim(workspaceName(gs, o.Name), gs, labels(gs, ComponentSandbox, o.Name), o.Workspace.StorageSpec, !o.Workspace.Retain)
}
