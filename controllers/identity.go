package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/config"
)

// TokenReviewClusterRole grants exactly what a gateway needs to check
// ServiceAccount tokens: creating TokenReviews. It is cluster-scoped (the
// API has no namespaced TokenReview), shared by every GarraServer, and
// left in place when they go.
const TokenReviewClusterRole = "garra-gateway-tokenreview"

// TokenReviewFinalizer holds a GarraServer whose gateway was bound to
// TokenReviewClusterRole until the binding is deleted: a namespaced owner
// cannot own a cluster-scoped object, so no garbage collection would.
const TokenReviewFinalizer = "garra.garraia.io/tokenreview-binding" //nolint:gosec // G101: a finalizer name

// LabelNamespace marks the cluster-scoped objects of a GarraServer with
// its namespace (LabelInstance has its name), to find them for cleanup.
const LabelNamespace = "garra.garraia.io/namespace"

// authMode is an orchestrator's mode in the config's names.
func authMode(o garrav1alpha1.OrchestratorSettings) string {
	switch {
	case o.Auth == nil || o.Auth.Token != nil:
		return config.AuthToken
	case o.Auth.ServiceAccount != nil:
		return config.AuthServiceAccount
	case o.Auth.OIDC != nil:
		return config.AuthOIDC
	}
	return config.AuthToken
}

// usesToken: the orchestrator authenticates with a static token, so the
// operator generates (or reads) it and mounts it in the gateway.
func usesToken(o garrav1alpha1.OrchestratorSettings) bool { return authMode(o) == config.AuthToken }

// needsTokenReview: some orchestrator authenticates with a ServiceAccount.
func needsTokenReview(ms []member) bool {
	return slices.ContainsFunc(ms, func(m member) bool {
		return authMode(m.OrchestratorSettings) == config.AuthServiceAccount
	})
}

// Audience is the audience of the orchestrators' projected tokens:
// spec.gateway.audience, else the endpoint URL.
func Audience(gs *garrav1alpha1.GarraServer) string {
	if a := gs.Spec.Gateway.Audience; a != "" {
		return a
	}
	return Endpoint(gs)
}

// renderAuth is the orchestrator's auth block of config.yml (nil for the
// token mode). A ServiceAccount without a namespace is in the member's:
// the GarraServer's for an inline entry, the team's for an Orchestrator.
func renderAuth(m member) *config.OrchestratorAuth {
	o := m.OrchestratorSettings
	switch authMode(o) {
	case config.AuthServiceAccount:
		ns := o.Auth.ServiceAccount.Namespace
		if ns == "" {
			ns = m.at.Namespace
		}
		return &config.OrchestratorAuth{ServiceAccount: &config.ServiceAccountAuth{Namespace: ns, Name: o.Auth.ServiceAccount.Name}}
	case config.AuthOIDC:
		a := o.Auth.OIDC
		return &config.OrchestratorAuth{OIDC: &config.OIDCAuth{Issuer: a.Issuer, Audience: a.Audience, Subject: a.Subject, Claims: a.Claims}}
	}
	return nil
}

// gatewayServiceAccount is NAME-gateway, the gateway pod's identity: the
// subject of the TokenReview binding. Its token is mounted only when some
// orchestrator needs reviews (the pod spec decides).
func gatewayServiceAccount(gs *garrav1alpha1.GarraServer) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(gatewayName(gs), gs.Namespace).
		WithLabels(labels(gs, ComponentGateway, "")).
		WithOwnerReferences(ownerRefs(gs)...).
		WithAutomountServiceAccountToken(false)
}

func tokenReviewRole() *rbacv1ac.ClusterRoleApplyConfiguration {
	return rbacv1ac.ClusterRole(TokenReviewClusterRole).
		WithLabels(map[string]string{LabelName: AppName}).
		WithRules(rbacv1ac.PolicyRule().
			WithAPIGroups("authentication.k8s.io").
			WithResources("tokenreviews").
			WithVerbs("create"))
}

// tokenReviewBindingName is unique per GarraServer across namespaces.
func tokenReviewBindingName(gs *garrav1alpha1.GarraServer) string {
	return "garra-tokenreview-" + gs.Namespace + "-" + gs.Name
}

func tokenReviewBindingLabels(gs *garrav1alpha1.GarraServer) map[string]string {
	return map[string]string{LabelName: AppName, LabelInstance: gs.Name, LabelNamespace: gs.Namespace}
}

func tokenReviewBinding(gs *garrav1alpha1.GarraServer) *rbacv1ac.ClusterRoleBindingApplyConfiguration {
	return rbacv1ac.ClusterRoleBinding(tokenReviewBindingName(gs)).
		WithLabels(tokenReviewBindingLabels(gs)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("ClusterRole").WithName(TokenReviewClusterRole)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithNamespace(gs.Namespace).WithName(gatewayName(gs)))
}

// The operator may only grant what it holds, hence tokenreviews create.
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterrolebindings,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create

// applyIdentity gives the gateway its ServiceAccount and, while some
// orchestrator authenticates with a ServiceAccount, the binding that lets
// it create TokenReviews; the finalizer goes on first, so a binding never
// exists without it. Without such orchestrators, a binding left from
// before is removed and the finalizer with it.
func (r *GarraServerReconciler) applyIdentity(ctx context.Context, s *reconcileState) error {
	gs := s.gs
	if _, err := applyIfChanged(ctx, r.Client, gatewayServiceAccount(gs), &corev1.ServiceAccount{}, corev1ac.ExtractServiceAccount); err != nil {
		return err
	}
	if !needsTokenReview(s.members) {
		return r.releaseTokenReview(ctx, gs)
	}
	if len(r.WatchNamespaces) > 0 {
		s.tokenReview = externalBindingMessage(gs, s.members, r.WatchNamespaces)
		return nil
	}
	if !controllerutil.ContainsFinalizer(gs, TokenReviewFinalizer) {
		old := gs.DeepCopy()
		controllerutil.AddFinalizer(gs, TokenReviewFinalizer)
		if err := r.Patch(ctx, gs, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})); err != nil {
			return fmt.Errorf("add finalizer %s: %w", TokenReviewFinalizer, err)
		}
	}
	if _, err := applyIfChanged(ctx, r.Client, tokenReviewRole(), &rbacv1.ClusterRole{}, rbacv1ac.ExtractClusterRole); err != nil {
		return err
	}
	_, err := applyIfChanged(ctx, r.Client, tokenReviewBinding(gs), &rbacv1.ClusterRoleBinding{}, rbacv1ac.ExtractClusterRoleBinding)
	return err
}

// externalBindingMessage says, for a namespace-scoped operator, which
// orchestrator needs TokenReviews and what a cluster admin must bind: a
// Role cannot grant a cluster-scoped verb, so the operator neither
// creates nor reads that binding.
func externalBindingMessage(gs *garrav1alpha1.GarraServer, ms []member, watched []string) string {
	var fields []string
	for i, o := range gs.Spec.Orchestrators {
		if authMode(o.OrchestratorSettings) == config.AuthServiceAccount {
			fields = append(fields, fmt.Sprintf("spec.orchestrators[%d].auth.serviceAccount (%s)", i, o.Name))
		}
	}
	for _, m := range ms {
		if m.attached && authMode(m.OrchestratorSettings) == config.AuthServiceAccount {
			fields = append(fields, "spec.auth.serviceAccount of Orchestrator "+m.ID)
		}
	}
	return fmt.Sprintf("%s: the operator watches only the namespaces %s and cannot bind a ClusterRole; "+
		"a cluster admin must bind one that allows create on tokenreviews.authentication.k8s.io "+
		"(system:auth-delegator, or %s) to ServiceAccount %s/%s, or the gateway refuses these orchestrators",
		strings.Join(fields, ", "), strings.Join(watched, ","), TokenReviewClusterRole, gs.Namespace, gatewayName(gs))
}

// releaseTokenReview deletes gs's TokenReview bindings (found by label,
// whatever their name) and then its finalizer. Nothing is asked of the
// API server for a GarraServer that never had one.
func (r *GarraServerReconciler) releaseTokenReview(ctx context.Context, gs *garrav1alpha1.GarraServer) error {
	if !controllerutil.ContainsFinalizer(gs, TokenReviewFinalizer) {
		return nil
	}
	var list rbacv1.ClusterRoleBindingList
	if err := r.APIReader.List(ctx, &list, client.MatchingLabelsSelector{Selector: k8slabels.SelectorFromSet(tokenReviewBindingLabels(gs))}); err != nil {
		return fmt.Errorf("list TokenReview bindings: %w", err)
	}
	for i := range list.Items {
		if err := r.Delete(ctx, &list.Items[i]); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete ClusterRoleBinding %s: %w", list.Items[i].Name, err)
		}
	}
	old := gs.DeepCopy()
	controllerutil.RemoveFinalizer(gs, TokenReviewFinalizer)
	if err := r.Patch(ctx, gs, client.MergeFromWithOptions(old, client.MergeFromWithOptimisticLock{})); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("remove finalizer %s: %w", TokenReviewFinalizer, err)
	}
	return nil
}
