package controllers

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// EnvStoreDSN carries the PostgreSQL DSN into the gateway pod.
const EnvStoreDSN = "GARRA_STORE_DSN"

// sharedStore says whether the gateway keeps its state in PostgreSQL: then
// it has no data claim and may run several replicas.
func sharedStore(gs *garrav1alpha1.GarraServer) bool {
	return gs.Spec.Gateway.Store.Driver == garrav1alpha1.StorePostgres
}

// gatewayReplicas is spec.gateway.replicas; with SQLite always 1 (the CRD
// refuses more; a spec the API server did not validate still gets one).
func gatewayReplicas(gs *garrav1alpha1.GarraServer) int32 {
	if !sharedStore(gs) || gs.Spec.Gateway.Replicas < 1 {
		return 1
	}
	return gs.Spec.Gateway.Replicas
}

// legacyPollerRoleName names the Role and RoleBinding that earlier
// versions made for a poller Lease. The replicas now elect the poller
// through their shared PostgreSQL, so the operator deletes them.
func legacyPollerRoleName(gs *garrav1alpha1.GarraServer) string { return gs.Name + "-gateway-poller" }

// sharedGatewayDeployment turns the single-pod Deployment into the
// replicated one: spec.gateway.replicas, a rolling update that never goes
// below the desired count (maxUnavailable 0), replicas preferably on
// different nodes, and the gateway's own ServiceAccount with its token.
func sharedGatewayDeployment(gs *garrav1alpha1.GarraServer, dep *appsv1ac.DeploymentApplyConfiguration) {
	lbl := labels(gs, ComponentGateway, "")
	zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
	dep.Spec.WithReplicas(gatewayReplicas(gs)).
		WithStrategy(appsv1ac.DeploymentStrategy().WithType(appsv1.RollingUpdateDeploymentStrategyType).
			WithRollingUpdate(appsv1ac.RollingUpdateDeployment().WithMaxUnavailable(zero).WithMaxSurge(one)))
	pod := dep.Spec.Template.Spec
	pod.WithServiceAccountName(gatewayName(gs)).
		WithAutomountServiceAccountToken(true).
		WithAffinity(corev1ac.Affinity().WithPodAntiAffinity(corev1ac.PodAntiAffinity().
			WithPreferredDuringSchedulingIgnoredDuringExecution(corev1ac.WeightedPodAffinityTerm().
				WithWeight(100).
				WithPodAffinityTerm(corev1ac.PodAffinityTerm().
					WithTopologyKey(corev1.LabelHostname).
					WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(lbl))))))
	// No claim: the data dir (audit file, local workspaces) is the pod's own.
	for i := range pod.Volumes {
		if deref(pod.Volumes[i].Name) == "data" {
			pod.Volumes[i] = *corev1ac.Volume().WithName("data").WithEmptyDir(corev1ac.EmptyDirVolumeSource())
		}
	}
}

// gatewayPDB keeps all but one replica up through voluntary disruptions
// (a node drain evicts one gateway pod at a time). With one replica it
// does not block a drain.
func gatewayPDB(gs *garrav1alpha1.GarraServer) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	lbl := labels(gs, ComponentGateway, "")
	return policyv1ac.PodDisruptionBudget(gatewayName(gs), gs.Namespace).
		WithLabels(lbl).
		WithOwnerReferences(ownerRefs(gs)...).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMaxUnavailable(intstr.FromInt32(1)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(lbl)))
}
