package controllers

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/sandboxz"
)

// Idle sandboxes. With sandbox.idleTimeout the operator leaves the
// Deployment's replicas to whoever scaled it last (its apply does not set
// them): it scales the sandbox to zero once the gateway has not started a
// call in it for that long, and the gateway scales it back to one on the
// next call (a Role on exactly those Deployments). The gateway marks each
// call on the Deployment (AnnotationLastCall), so every gateway replica's
// calls count and the clock survives restarts of either side.

// AnnotationLastCall is the gateway's mark of a sandbox's last call.
const AnnotationLastCall = sandboxz.AnnotationLastCall

// EventSandboxSuspended is the event of an idle sandbox scaled to zero.
const EventSandboxSuspended = "SandboxSuspended"

// idleTimeout is o's sandbox.idleTimeout; 0 means always running.
func idleTimeout(o garrav1alpha1.OrchestratorSettings) time.Duration {
	if o.Sandbox.IdleTimeout == nil {
		return 0
	}
	return o.Sandbox.IdleTimeout.Duration
}

// idle: m's sandbox is suspended when unused.
func idle(m member) bool { return idleTimeout(m.OrchestratorSettings) > 0 }

// idleSandboxes are the names of the Deployments in the server's own
// namespace the gateway may wake (the wake Role's); an attached member's
// elsewhere has a Role of its own (memberWakeRole).
func idleSandboxes(gs *garrav1alpha1.GarraServer, ms []member) []string {
	var out []string
	for _, m := range ms {
		if idle(m) && m.at.Namespace == gs.Namespace {
			out = append(out, m.sandboxName())
		}
	}
	return out
}

// lastCall is the gateway's mark on d; an absent or unparsable mark is
// none.
func lastCall(d *appsv1.Deployment) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339Nano, d.Annotations[AnnotationLastCall])
	return t, err == nil
}

// lastActivity is when the sandbox was last used: the gateway's mark, or
// when the Deployment was created if the gateway has not marked it.
func lastActivity(d *appsv1.Deployment) time.Time {
	if t, ok := lastCall(d); ok {
		return t
	}
	return d.CreationTimestamp.Time
}

// suspendDue says whether a running sandbox last used at last is to be
// suspended now, and otherwise how long until it is. Pure, for the table
// test.
func suspendDue(last time.Time, idle time.Duration, now time.Time) (bool, time.Duration) {
	left := last.Add(idle).Sub(now)
	if left <= 0 {
		return true, 0
	}
	return false, left
}

// suspended reports whether d is scaled to zero.
func suspended(d *appsv1.Deployment) bool {
	return d != nil && d.Spec.Replicas != nil && *d.Spec.Replicas == 0
}

// wakeRoleName is the Role that lets the gateway wake its idle sandboxes.
func wakeRoleName(gs *garrav1alpha1.GarraServer) string { return gs.Name + "-gateway-wake" }

// wakeRole lets the gateway read and patch exactly the idle-enabled
// sandbox Deployments (to mark a call and scale to one).
func wakeRole(gs *garrav1alpha1.GarraServer, names []string) *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(wakeRoleName(gs), gs.Namespace).
		WithLabels(labels(gs, ComponentGateway, "")).
		WithOwnerReferences(ownerRefs(gs)...).
		WithRules(rbacv1ac.PolicyRule().WithAPIGroups("apps").WithResources("deployments").
			WithResourceNames(names...).WithVerbs("get", "patch"))
}

func wakeRoleBinding(gs *garrav1alpha1.GarraServer) *rbacv1ac.RoleBindingApplyConfiguration {
	return gatewayRoleBinding(gs, wakeRoleName(gs))
}

// gatewayRoleBinding binds the Role role of gs's namespace, of the same
// name, to the gateway's ServiceAccount.
func gatewayRoleBinding(gs *garrav1alpha1.GarraServer, role string) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(role, gs.Namespace).
		WithLabels(labels(gs, ComponentGateway, "")).
		WithOwnerReferences(ownerRefs(gs)...).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(role)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(gatewayName(gs)).WithNamespace(gs.Namespace))
}

// memberWakeRoleName is the Role that lets the gateway wake m's sandbox
// when m lives outside the server's namespace.
func memberWakeRoleName(m member) string { return m.sandboxName() + "-wake" }

// memberWakeRole and memberWakeRoleBinding let the server's gateway read
// and patch m's sandbox Deployment, in m's namespace, owned by m's owner:
// a team's namespace grants the gateway exactly its own sandbox.
func memberWakeRole(m member) *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(memberWakeRoleName(m), m.at.Namespace).
		WithLabels(m.labels()).
		WithOwnerReferences(m.at.ownerRefs()...).
		WithRules(rbacv1ac.PolicyRule().WithAPIGroups("apps").WithResources("deployments").
			WithResourceNames(m.sandboxName()).WithVerbs("get", "patch"))
}

func memberWakeRoleBinding(m member) *rbacv1ac.RoleBindingApplyConfiguration {
	return rbacv1ac.RoleBinding(memberWakeRoleName(m), m.at.Namespace).
		WithLabels(m.labels()).
		WithOwnerReferences(m.at.ownerRefs()...).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(memberWakeRoleName(m))).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(gatewayName(m.gs)).WithNamespace(m.gs.Namespace))
}

// applyMemberWakeRole gives the gateway the wake Role of an idle-enabled
// member outside the server's namespace, and removes it when the member
// stops idling.
func (r *GarraServerReconciler) applyMemberWakeRole(ctx context.Context, m member) error {
	if m.at.Namespace == m.gs.Namespace {
		return nil // the server's own wake Role covers it
	}
	if !idle(m) {
		for _, o := range []client.Object{&rbacv1.RoleBinding{}, &rbacv1.Role{}} {
			if err := r.deleteControlled(ctx, m.at, memberWakeRoleName(m), o); err != nil {
				return err
			}
		}
		return nil
	}
	if _, err := applyIfChanged(ctx, r.Client, memberWakeRole(m), &rbacv1.Role{}, rbacv1ac.ExtractRole); err != nil {
		return err
	}
	_, err := applyIfChanged(ctx, r.Client, memberWakeRoleBinding(m), &rbacv1.RoleBinding{}, rbacv1ac.ExtractRoleBinding)
	return err
}

// applyWakeRole keeps the wake Role in step with the idle-enabled
// sandboxes, and removes it (and its binding) when there are none.
func (r *GarraServerReconciler) applyWakeRole(ctx context.Context, gs *garrav1alpha1.GarraServer, ms []member) error {
	names := idleSandboxes(gs, ms)
	if len(names) == 0 {
		// Deleted only when there: a pass that finds nothing to do writes
		// nothing.
		for _, o := range []client.Object{&rbacv1.RoleBinding{}, &rbacv1.Role{}} {
			err := r.Get(ctx, client.ObjectKey{Namespace: gs.Namespace, Name: wakeRoleName(gs)}, o)
			switch {
			case apierrors.IsNotFound(err):
				continue
			case err != nil:
				return fmt.Errorf("get %T %s: %w", o, wakeRoleName(gs), err)
			}
			if err := r.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("delete %T %s: %w", o, wakeRoleName(gs), err)
			}
		}
		return nil
	}
	if _, err := applyIfChanged(ctx, r.Client, wakeRole(gs, names), &rbacv1.Role{}, rbacv1ac.ExtractRole); err != nil {
		return err
	}
	_, err := applyIfChanged(ctx, r.Client, wakeRoleBinding(gs), &rbacv1.RoleBinding{}, rbacv1ac.ExtractRoleBinding)
	return err
}

// suspendIdle scales to zero every idle-enabled sandbox whose last call is
// older than its idleTimeout, and asks for a pass when the next one is due.
func (r *GarraServerReconciler) suspendIdle(ctx context.Context, s *reconcileState) error {
	gs := s.gs
	now := r.now()
	for _, m := range s.members {
		idle := idleTimeout(m.OrchestratorSettings)
		if idle == 0 {
			continue
		}
		d, err := r.deployment(ctx, m.at.Namespace, m.sandboxName())
		if err != nil || d == nil || suspended(d) {
			if err != nil {
				return err
			}
			continue
		}
		due, left := suspendDue(lastActivity(d), idle, now)
		if !due {
			s.requeueAt(left)
			continue
		}
		// A merge patch of replicas alone, not part of the apply: the
		// gateway sets them back to one on the next call. It holds only
		// if the Deployment is still the one read: a call marked since
		// (the read may come from a lagging cache) makes it conflict, and
		// the next pass reads the mark instead of stopping that call's pod.
		patch := client.MergeFromWithOptions(d.DeepCopy(), client.MergeFromWithOptimisticLock{})
		d.Spec.Replicas = ptr.To[int32](0)
		if err := r.Patch(ctx, d, patch, client.FieldOwner(FieldOwner)); err != nil {
			if apierrors.IsConflict(err) {
				s.requeueAt(time.Second)
				continue
			}
			return fmt.Errorf("suspend sandbox %s: %w", d.Name, err)
		}
		r.event(gs, false, EventSandboxSuspended, "Scale", "sandbox %s scaled to zero after %s without a call; the next call of %s wakes it", d.Name, idle, m.ID)
	}
	return nil
}
