package controllers

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// OrchestratorControllerName names the Orchestrator status controller.
const OrchestratorControllerName = "orchestrator"

// OrchestratorReconciler writes an Orchestrator's status: whether its
// server accepts it and whether its sandbox is up. It writes nothing
// else: the server's reconciler provisions what an accepted Orchestrator
// needs (its sandbox joins the gateway's config with the server's other
// orchestrators), from the same attachment decision.
type OrchestratorReconciler struct {
	client.Client
	// SandboxImage is the manager's default sandbox image.
	SandboxImage string
	// WatchNamespaces are those of a namespace-scoped manager; empty
	// means all.
	WatchNamespaces []string
}

// +kubebuilder:rbac:groups=garra.garraia.io,resources=orchestrators,verbs=get;list;watch
// +kubebuilder:rbac:groups=garra.garraia.io,resources=orchestrators/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Reconcile derives the status of one Orchestrator from the world:
//
//  1. load it, its server (absent: not accepted) and, for a Selector
//     rule, its namespace's labels;
//  2. decide the attachment (decideAttachment): the Accepted condition;
//  3. for an accepted one, read its sandbox Deployment: Ready, suspended,
//     last call, and where its token, workspace and sandbox are;
//  4. patch the status subresource when it differs.
func (r *OrchestratorReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ob := &garrav1alpha1.Orchestrator{}
	if err := r.Get(ctx, req.NamespacedName, ob); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ob.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	gs := &garrav1alpha1.GarraServer{}
	switch err := r.Get(ctx, serverKey(ob), gs); {
	case apierrors.IsNotFound(err):
		gs = nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("get GarraServer %s: %w", serverKey(ob), err)
	}
	var lbl map[string]string
	if gs != nil && len(r.WatchNamespaces) == 0 {
		var err error
		if lbl, err = namespaceLabels(ctx, r.Client, ob.Namespace); err != nil {
			return ctrl.Result{}, err
		}
	}
	att := decideAttachment(gs, ob, lbl, r.SandboxImage)
	var sandbox *appsv1.Deployment
	if att.accepted {
		m := attachedMember(gs, ob)
		d := &appsv1.Deployment{}
		switch err := r.Get(ctx, client.ObjectKey{Namespace: ob.Namespace, Name: m.sandboxName()}, d); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return ctrl.Result{}, fmt.Errorf("get Deployment %s: %w", m.sandboxName(), err)
		default:
			sandbox = d
		}
	}
	st := orchestratorStatus(gs, ob, att, sandbox)
	if equality.Semantic.DeepEqual(ob.Status, st) {
		return ctrl.Result{}, nil
	}
	old := ob.DeepCopy()
	ob.Status = st
	if err := r.Status().Patch(ctx, ob, client.MergeFrom(old), client.FieldOwner(FieldOwner)); err != nil {
		return ctrl.Result{}, fmt.Errorf("write status of Orchestrator %s: %w", OrchestratorID(ob), err)
	}
	return ctrl.Result{}, nil
}

// orchestratorStatus is ob's status given its attachment and its sandbox
// Deployment (nil when absent). Conditions keep their lastTransitionTime
// while their status does not change.
func orchestratorStatus(gs *garrav1alpha1.GarraServer, ob *garrav1alpha1.Orchestrator, att attachment, sandbox *appsv1.Deployment) garrav1alpha1.AttachedOrchestratorStatus {
	st := garrav1alpha1.AttachedOrchestratorStatus{
		ObservedGeneration: ob.Generation,
		Conditions:         append([]metav1.Condition(nil), ob.Status.Conditions...),
	}
	set := conditionSetter(&st.Conditions, ob.Generation)
	set(garrav1alpha1.ConditionAccepted, att.accepted, att.reason, att.message)
	if !att.accepted {
		set(garrav1alpha1.ConditionReady, false, garrav1alpha1.ReasonNotAccepted, "not accepted: see the Accepted condition")
		return st
	}
	m := attachedMember(gs, ob)
	st.Identity = m.ID
	st.Endpoint = Endpoint(gs)
	st.TokenSecret = tokenSecretName(m)
	st.WorkspaceClaim = m.workspaceName()
	st.SandboxEndpoint = m.sandboxURL()
	st.Suspended, st.LastCall = sleepStatus(m, sandbox)
	switch {
	case st.Suspended:
		set(garrav1alpha1.ConditionReady, true, garrav1alpha1.ReasonAvailable, "the sandbox is suspended while idle; the next call wakes it")
	case available(sandbox):
		set(garrav1alpha1.ConditionReady, true, garrav1alpha1.ReasonAvailable, "the sandbox "+m.sandboxName()+" has an available replica")
	default:
		set(garrav1alpha1.ConditionReady, false, garrav1alpha1.ReasonProgressing, "waiting for the sandbox Deployment "+m.sandboxName()+" to have an available replica")
	}
	return st
}
