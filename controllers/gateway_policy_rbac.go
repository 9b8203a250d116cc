package controllers

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// The gateway watches its own ConfigMap and tokens Secret through the API
// server (`garra gateway --watch-*`), so that a new orchestrator or a
// rotated token applies within the API server's event delay instead of
// the kubelet's sync period. Its Role grants exactly that: get, list and
// watch of those two names. The gateway lists and watches with a field
// selector on the name, which is how a list or watch is authorised
// against resourceNames; without it the API server refuses.

// policyRoleName is the Role that lets the gateway read its policy.
func policyRoleName(gs *garrav1alpha1.GarraServer) string { return gs.Name + "-gateway-policy" }

// GatewayPolicyRole is the Role of the gateway's policy watch.
func GatewayPolicyRole(gs *garrav1alpha1.GarraServer) *rbacv1ac.RoleApplyConfiguration {
	verbs := []string{"get", "list", "watch"}
	return rbacv1ac.Role(policyRoleName(gs), gs.Namespace).
		WithLabels(labels(gs, ComponentGateway, "")).
		WithOwnerReferences(ownerRefs(gs)...).
		WithRules(
			rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("configmaps").
				WithResourceNames(gatewayName(gs)).WithVerbs(verbs...),
			rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("secrets").
				WithResourceNames(tokensName(gs)).WithVerbs(verbs...),
		)
}

// GatewayPolicyRoleBinding binds GatewayPolicyRole to the gateway's
// ServiceAccount.
func GatewayPolicyRoleBinding(gs *garrav1alpha1.GarraServer) *rbacv1ac.RoleBindingApplyConfiguration {
	return gatewayRoleBinding(gs, policyRoleName(gs))
}

// gatewayWatchArgs are the flags that point the gateway at its policy
// objects: the ConfigMap config.yml is mounted from and the tokens Secret
// mounted on TokensDir.
func gatewayWatchArgs(gs *garrav1alpha1.GarraServer) []string {
	return []string{
		"--watch-namespace", gs.Namespace,
		"--watch-configmap", gatewayName(gs),
		"--watch-secret", tokensName(gs),
		"--watch-secret-dir", TokensDir,
	}
}

// applyPolicyRole keeps the gateway's policy Role and its binding.
func (r *GarraServerReconciler) applyPolicyRole(ctx context.Context, s *reconcileState) error {
	if _, err := applyIfChanged(ctx, r.Client, GatewayPolicyRole(s.gs), &rbacv1.Role{}, rbacv1ac.ExtractRole); err != nil {
		return err
	}
	_, err := applyIfChanged(ctx, r.Client, GatewayPolicyRoleBinding(s.gs), &rbacv1.RoleBinding{}, rbacv1ac.ExtractRoleBinding)
	return err
}
