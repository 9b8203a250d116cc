package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// applyPolicy publishes what the gateway accepts, which it watches
// through the API server: the tokens Secret, then the ConfigMap, so that a
// new member's token is in place when the config naming it arrives. A
// handled rotate-token annotation is removed in between. The members'
// sandbox token Secrets come last: the gateway reads none of them, and a
// new caller waits for nothing it does not need. A changed config.yml is
// checked as `garra config check` would, and its problems become one
// Warning event.
func (r *GarraServerReconciler) applyPolicy(ctx context.Context, s *reconcileState) error {
	data, err := r.applyTokens(ctx, s)
	if err != nil {
		return err
	}
	if err := r.ackRotation(ctx, s); err != nil {
		return err
	}
	changed, err := applyIfChanged(ctx, r.Client, gatewayConfigMap(s.gs, s.configYAML), &corev1.ConfigMap{}, corev1ac.ExtractConfigMap)
	if err != nil {
		return err
	}
	if changed {
		r.warnConfig(s.gs, s.members, s.configYAML)
	}
	for _, m := range s.members {
		if err := r.applySandboxToken(ctx, m, sandboxSecretData(m, data[m.tokenKey()+SandboxKeySuffix], s.egressCA)); err != nil {
			if err := s.isolate(m, err); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyGateway applies the gateway's claim (or, on a shared store, its
// disruption budget), Deployment and Service.
func (r *GarraServerReconciler) applyGateway(ctx context.Context, s *reconcileState) error {
	gs := s.gs
	if sharedStore(gs) {
		if err := r.applySharedGateway(ctx, gs); err != nil {
			return err
		}
	} else if _, err := r.applyClaim(ctx, gatewayClaim(gs)); err != nil {
		return err
	}
	dep := gatewayDeployment(gs, anyEgressGateway(s.members), gatewayImage(gs, r.GarraImage), s.gatewayHash())
	if _, err := applyIfChanged(ctx, r.Client, dep, &appsv1.Deployment{}, appsv1ac.ExtractDeployment); err != nil {
		return err
	}
	_, err := applyIfChanged(ctx, r.Client, gatewayService(gs, s.members), &corev1.Service{}, corev1ac.ExtractService)
	return err
}

// applySharedGateway applies what replicas on a shared store need besides
// the Deployment and their ServiceAccount (applyIdentity's): the
// PodDisruptionBudget. It also deletes the poller Lease's Role and
// RoleBinding that earlier versions made, if this GarraServer owns them.
func (r *GarraServerReconciler) applySharedGateway(ctx context.Context, gs *garrav1alpha1.GarraServer) error {
	for _, obj := range []client.Object{&rbacv1.RoleBinding{}, &rbacv1.Role{}} {
		if err := r.deleteOwned(ctx, gs, legacyPollerRoleName(gs), obj); err != nil {
			return err
		}
	}
	_, err := applyIfChanged(ctx, r.Client, gatewayPDB(gs), &policyv1.PodDisruptionBudget{}, policyv1ac.ExtractPodDisruptionBudget)
	return err
}

// applyTokens writes NAME-gateway-tokens when what it should hold differs
// from what it holds, notes the overlaps in progress for the status and
// the requeue that retires them, and returns the lines it holds, which
// the members' sandbox token Secrets are written from.
func (r *GarraServerReconciler) applyTokens(ctx context.Context, s *reconcileState) (map[string][]byte, error) {
	gs := s.gs
	var live *corev1.Secret
	sec := &corev1.Secret{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: gs.Namespace, Name: tokensName(gs)}, sec); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return nil, fmt.Errorf("get Secret %s: %w", tokensName(gs), err)
	default:
		live = sec
	}
	now := r.now()
	data, ann, until := tokensSecretData(gs, s.members, live, s.values, now)
	s.rotations = until
	for _, u := range until {
		s.requeueAt(u.Sub(now))
	}
	if !tokensSecretCurrent(gs, live, data, ann) {
		if err := r.Apply(ctx, tokensSecret(gs, data, ann), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("apply Secret %s: %w", tokensName(gs), err)
		}
	}
	return data, nil
}

// applySandboxToken writes m's sandbox token Secret when it differs.
func (r *GarraServerReconciler) applySandboxToken(ctx context.Context, m member, want map[string][]byte) error {
	name := m.sandboxTokenName()
	sec := &corev1.Secret{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: m.at.Namespace, Name: name}, sec); {
	case apierrors.IsNotFound(err):
		sec = nil
	case err != nil:
		return fmt.Errorf("get Secret %s/%s: %w", m.at.Namespace, name, err)
	}
	if secretCurrent(sec, m.at.Owner.UID, m.labels(), want, nil) {
		return nil
	}
	if err := r.Apply(ctx, sandboxTokenSecret(m, want), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply Secret %s/%s: %w", m.at.Namespace, name, err)
	}
	return nil
}

func (r *GarraServerReconciler) warnConfig(gs *garrav1alpha1.GarraServer, ms []member, configYAML string) {
	problems, err := configWarnings(configYAML, gatewayPodEnv(gs), gatewayPodFiles(ms))
	if err != nil {
		r.event(gs, true, garrav1alpha1.EventConfigWarning, "Validate", "%v", err)
		return
	}
	if len(problems) == 0 {
		return
	}
	r.event(gs, true, garrav1alpha1.EventConfigWarning, "Validate", "%s", configWarningNote(problems))
}

// applyOrchestrators applies each orchestrator's ServiceAccount, workspace
// claim, sandbox Deployment, Service and NetworkPolicy, in its namespace,
// and for an idle-enabled one outside the server's namespace the Role that
// lets the gateway wake it.
//
// An attached member's failure is its own (a team's ResourceQuota full, a
// Service range exhausted): it is recorded for its status and retried
// later, and the other members are applied all the same.
func (r *GarraServerReconciler) applyOrchestrators(ctx context.Context, s *reconcileState) error {
	for _, m := range s.members {
		if s.yield(ctx) {
			return nil
		}
		if _, failed := s.memberFailed[m.ID]; failed {
			continue
		}
		if err := r.applyMember(ctx, s, m); err != nil {
			if err := s.isolate(m, err); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyMember applies one member's objects.
func (r *GarraServerReconciler) applyMember(ctx context.Context, s *reconcileState, m member) error {
	if _, err := applyIfChanged(ctx, r.Client, sandboxServiceAccount(m), &corev1.ServiceAccount{}, corev1ac.ExtractServiceAccount); err != nil {
		return err
	}
	if _, err := r.applyClaim(ctx, workspaceClaim(m)); err != nil {
		return err
	}
	dep := sandboxDeployment(m.gs, m, resolveSandboxImages(m.gs, m, r.SandboxImage, r.GarraImage), s.egressCA)
	if _, err := applyIfChanged(ctx, r.Client, dep, &appsv1.Deployment{}, appsv1ac.ExtractDeployment); err != nil {
		return err
	}
	if _, err := applyIfChanged(ctx, r.Client, sandboxService(m), &corev1.Service{}, corev1ac.ExtractService); err != nil {
		return err
	}
	if _, err := applyIfChanged(ctx, r.Client, sandboxNetworkPolicy(m), &networkingv1.NetworkPolicy{}, networkingv1ac.ExtractNetworkPolicy); err != nil {
		return err
	}
	return r.applyMemberWakeRole(ctx, m)
}

// MemberRetry is when a pass comes back for an attached Orchestrator whose
// objects could not be written.
const MemberRetry = 30 * time.Second

// isolate is err for an inline member (the server's pass fails, as it
// always has); for an attached one it is recorded as that member's
// failure, the pass goes on and comes back in MemberRetry.
func (s *reconcileState) isolate(m member, err error) error {
	if !m.attached {
		return err
	}
	if s.memberFailed == nil {
		s.memberFailed = map[string]string{}
	}
	if _, ok := s.memberFailed[m.ID]; !ok {
		s.memberFailed[m.ID] = oneLine(err.Error())
	}
	s.requeueAt(MemberRetry)
	return nil
}

// applyClaim applies a claim; on an existing one only what Kubernetes lets
// change (see claimSpecForUpdate), plus metadata.
func (r *GarraServerReconciler) applyClaim(ctx context.Context, desired *corev1ac.PersistentVolumeClaimApplyConfiguration) (bool, error) {
	live := &corev1.PersistentVolumeClaim{}
	err := r.Get(ctx, client.ObjectKey{Namespace: deref(desired.Namespace), Name: deref(desired.Name)}, live)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, fmt.Errorf("get claim %s: %w", deref(desired.Name), err)
	default:
		applied, err := corev1ac.ExtractPersistentVolumeClaim(live, FieldOwner)
		if err != nil {
			return false, fmt.Errorf("extract claim %s: %w", live.Name, err)
		}
		desired.Spec = claimSpecForUpdate(desired.Spec, applied.Spec, live)
	}
	return applyIfChanged(ctx, r.Client, desired, &corev1.PersistentVolumeClaim{}, corev1ac.ExtractPersistentVolumeClaim)
}

// removeStale deletes the objects of orchestrators that are no longer
// members: those labelled with this GarraServer and an orchestrator that
// is not one, and controlled by it (inline) or by an Orchestrator
// (attached, then detached: its Orchestrator still exists but is no longer
// accepted). A retained workspace claim has no controller, so it stays; a
// detached Orchestrator keeps its claim and its token Secret too, so that
// attaching it again finds its workspace and its callers' token as they
// were (deleting the Orchestrator removes both, through their owner
// reference).
func (r *GarraServerReconciler) removeStale(ctx context.Context, s *reconcileState) error {
	gs := s.gs
	keep := map[string]bool{}
	for _, m := range s.members {
		keep[m.ID] = true
	}
	deleted := map[string][]string{}
	retained := map[string]string{}
	lists := []client.ObjectList{
		&appsv1.DeploymentList{}, &corev1.ServiceList{}, &networkingv1.NetworkPolicyList{},
		&corev1.ServiceAccountList{}, &corev1.SecretList{}, &corev1.PersistentVolumeClaimList{},
		// Only an attached member's wake Role carries its label.
		&rbacv1.RoleList{}, &rbacv1.RoleBindingList{},
	}
lists:
	for _, list := range lists {
		if err := r.List(ctx, list,
			client.MatchingLabels{LabelName: AppName, LabelInstance: gs.Name},
			client.HasLabels{LabelOrchestrator}); err != nil {
			return fmt.Errorf("list %T: %w", list, err)
		}
		objs, err := objectsOf(list)
		if err != nil {
			return err
		}
		for _, obj := range objs {
			o, attached, ours := memberOf(gs, obj)
			if !ours || keep[o] || obj.GetDeletionTimestamp() != nil {
				// Another server's, kept, or already going (a claim waits
				// for its pvc-protection finalizer): nothing to write.
				continue
			}
			if attached {
				if keptOnDetach(obj) {
					continue
				}
				if ref := metav1.GetControllerOfNoCopy(obj); ref == nil || ref.Kind != orchestratorKind.Kind || ref.APIVersion != orchestratorKind.GroupVersion().String() {
					continue
				}
			} else if !metav1.IsControlledBy(obj, gs) {
				if _, ok := obj.(*corev1.PersistentVolumeClaim); ok {
					retained[o] = obj.GetName()
				}
				continue
			}
			if s.yield(ctx) {
				// What was deleted so far is still reported below.
				break lists
			}
			if err := r.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
				if s.yield(ctx) {
					break lists
				}
				return fmt.Errorf("delete %T %s: %w", obj, obj.GetName(), err)
			}
			deleted[o] = append(deleted[o], kindOf(obj)+" "+obj.GetName())
		}
	}
	for _, o := range sortedKeys(deleted) {
		msg := "orchestrator " + o + " removed: deleted " + strings.Join(deleted[o], ", ")
		if c, ok := retained[o]; ok {
			msg += "; workspace claim " + c + " kept (retain)"
		}
		r.event(gs, false, garrav1alpha1.EventOrchestratorRemoved, "Delete", "%s", msg)
		s.removed = append(s.removed, o)
	}
	return nil
}

// memberOf reads from a child's labels which member of gs it belongs to
// (its ID), whether that member is attached, and whether it is gs's at
// all: an inline member's objects are in gs's namespace and carry no
// server namespace label; an attached one's carry gs's namespace.
func memberOf(gs *garrav1alpha1.GarraServer, obj client.Object) (id string, attached, ours bool) {
	l := obj.GetLabels()
	name := l[LabelOrchestrator]
	switch ns, ok := l[LabelNamespace]; {
	case ok:
		return obj.GetNamespace() + "/" + name, true, ns == gs.Namespace
	default:
		return name, false, obj.GetNamespace() == gs.Namespace
	}
}

// keptOnDetach: a detached Orchestrator's workspace claim and generated
// token Secret stay until the Orchestrator itself is deleted.
func keptOnDetach(obj client.Object) bool {
	switch obj.(type) {
	case *corev1.PersistentVolumeClaim:
		return true
	case *corev1.Secret:
		return obj.GetName() == attachedTokenSecretName(obj.GetLabels()[LabelOrchestrator])
	}
	return false
}

// objectsOf returns pointers to a typed list's items.
func objectsOf(list client.ObjectList) ([]client.Object, error) {
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, fmt.Errorf("list %T: %w", list, err)
	}
	out := make([]client.Object, 0, len(items))
	for _, it := range items {
		obj, ok := it.(client.Object)
		if !ok {
			return nil, fmt.Errorf("list %T holds %T, not an object", list, it)
		}
		out = append(out, obj)
	}
	return out, nil
}

func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *appsv1.Deployment:
		return "Deployment"
	case *corev1.Service:
		return "Service"
	case *networkingv1.NetworkPolicy:
		return "NetworkPolicy"
	case *corev1.ServiceAccount:
		return "ServiceAccount"
	case *corev1.Secret:
		return "Secret"
	case *corev1.PersistentVolumeClaim:
		return "PersistentVolumeClaim"
	case *rbacv1.Role:
		return "Role"
	case *rbacv1.RoleBinding:
		return "RoleBinding"
	}
	return fmt.Sprintf("%T", obj)
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	return slices.Sorted(maps.Keys(m))
}

// deleteOwned deletes the object name of obj's kind in gs's namespace when
// gs controls it; absent or someone else's, it is left alone.
func (r *GarraServerReconciler) deleteOwned(ctx context.Context, gs *garrav1alpha1.GarraServer, name string, obj client.Object) error {
	return r.deleteControlled(ctx, serverPlacement(gs), name, obj)
}

// deleteControlled deletes the object name of obj's kind in at's namespace
// when at's owner controls it; absent or someone else's, it is left alone.
func (r *GarraServerReconciler) deleteControlled(ctx context.Context, at placement, name string, obj client.Object) error {
	switch err := r.Get(ctx, client.ObjectKey{Namespace: at.Namespace, Name: name}, obj); {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("get %T %s: %w", obj, name, err)
	}
	if ref := metav1.GetControllerOfNoCopy(obj); ref == nil || ref.UID != at.Owner.UID || obj.GetDeletionTimestamp() != nil {
		return nil
	}
	uid := obj.GetUID()
	if err := r.Delete(ctx, obj, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete %T %s: %w", obj, name, err)
	}
	return nil
}
