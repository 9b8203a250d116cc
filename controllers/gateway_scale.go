package controllers

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/config"
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

// pollerLeaseName is the Lease that elects the replica polling Telegram.
func pollerLeaseName(gs *garrav1alpha1.GarraServer) string { return gs.Name + "-gateway-telegram" }

// pollerRoleName names the Role and RoleBinding that let the gateway's
// ServiceAccount hold that Lease.
func pollerRoleName(gs *garrav1alpha1.GarraServer) string { return gs.Name + "-gateway-poller" }

// sharedGatewayDeployment turns the single-pod Deployment into the
// replicated one: spec.gateway.replicas, a rolling update that never goes
// below the desired count (maxUnavailable 0), replicas preferably on
// different nodes, the gateway's own ServiceAccount with its token (for
// the Lease), and the variables naming the Lease and the pod.
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
	c := &pod.Containers[0]
	c.WithEnv(
		corev1ac.EnvVar().WithName(config.EnvPollerLease).WithValue(pollerLeaseName(gs)),
		corev1ac.EnvVar().WithName(config.EnvPodNamespace).WithValueFrom(corev1ac.EnvVarSource().
			WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.namespace"))),
		corev1ac.EnvVar().WithName(config.EnvPodName).WithValueFrom(corev1ac.EnvVarSource().
			WithFieldRef(corev1ac.ObjectFieldSelector().WithFieldPath("metadata.name"))),
	)
	// No claim: the data dir (audit file, local workspaces) is the pod's own.
	for i := range pod.Volumes {
		if deref(pod.Volumes[i].Name) == "data" {
			pod.Volumes[i] = *corev1ac.Volume().WithName("data").WithEmptyDir(corev1ac.EmptyDirVolumeSource())
		}
	}
}

// pollerRole lets the gateway read and renew its one Lease. Kubernetes
// cannot restrict create to a name (the object does not exist yet), so
// create is granted on leases of the namespace, and get and update only
// on the named Lease.
func pollerRole(gs *garrav1alpha1.GarraServer) *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(pollerRoleName(gs), gs.Namespace).
		WithLabels(labels(gs, ComponentGateway, "")).
		WithOwnerReferences(ownerRefs(gs)...).
		WithRules(
			rbacv1ac.PolicyRule().WithAPIGroups("coordination.k8s.io").WithResources("leases").
				WithResourceNames(pollerLeaseName(gs)).WithVerbs("get", "update"),
			rbacv1ac.PolicyRule().WithAPIGroups("coordination.k8s.io").WithResources("leases").
				WithVerbs("create"),
		)
}

func pollerRoleBinding(gs *garrav1alpha1.GarraServer) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(pollerRoleName(gs), gs.Namespace).
		WithLabels(labels(gs, ComponentGateway, "")).
		WithOwnerReferences(ownerRefs(gs)...).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(pollerRoleName(gs))).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(gatewayName(gs)).WithNamespace(gs.Namespace))
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
