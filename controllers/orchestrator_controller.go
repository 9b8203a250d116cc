package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// OrchestratorControllerName names the Orchestrator status controller.
const OrchestratorControllerName = "orchestrator"

// OrchestratorReconciler writes an Orchestrator's status: whether its
// server accepts it, whether its sandbox is up, and what the server's last
// pass learned about it (the gateway has loaded it, its handshake, its
// token overlap). It writes nothing else: the server's reconciler
// provisions what an accepted Orchestrator needs (its sandbox joins the
// gateway's config with the server's other orchestrators), from the same
// attachment decision.
type OrchestratorReconciler struct {
	client.Client
	// SandboxImage is the manager's default sandbox image.
	SandboxImage string
	// WatchNamespaces are those of a namespace-scoped manager; empty
	// means all.
	WatchNamespaces []string
	// Reports are the server reconciler's; nil means none (the
	// conditions they feed are then Unknown).
	Reports *memberReports
}

// The server's reconciler removes a handled rotate-token annotation.
// +kubebuilder:rbac:groups=garra.garraia.io,resources=orchestrators,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=garra.garraia.io,resources=orchestrators/status,verbs=get;patch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// Reconcile derives the status of one Orchestrator from the world:
//
//  1. load it, its server (absent: not accepted) and, for a Selector
//     rule, its namespace's labels;
//  2. decide the attachment (decideAttachment), then take the server's
//     last pass's word on it (a clash only the whole set shows refuses
//     it): the Accepted condition;
//  3. for an accepted one, read its sandbox Deployment: Ready, suspended,
//     last call, and where its token, workspace and sandbox are; and from
//     the server's report ConfigApplied, Verified, toolchain and token
//     rotation;
//  4. patch the status subresource when it differs.
func (r *OrchestratorReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ob := &garrav1alpha1.Orchestrator{}
	if err := r.Get(ctx, req.NamespacedName, ob); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !ob.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	gs, err := r.server(ctx, serverKey(ob))
	if err != nil {
		return ctrl.Result{}, err
	}
	var lbl map[string]string
	if gs != nil && len(r.WatchNamespaces) == 0 {
		if lbl, err = namespaceLabels(ctx, r.Client, ob.Namespace); err != nil {
			return ctrl.Result{}, err
		}
	}
	att := decideAttachment(gs, ob, lbl, r.SandboxImage, r.WatchNamespaces)
	var rv reportView
	if gs != nil {
		rv.rep, rv.ok, rv.known = r.Reports.get(serverKey(ob), OrchestratorID(ob))
		if att.accepted && rv.ok && rv.rep.refused != nil {
			att = *rv.rep.refused
		}
	}
	var sandbox *appsv1.Deployment
	var missing []secretRef
	if att.accepted {
		m := attachedMember(gs, ob)
		var err error
		if missing, err = missingSecrets(ctx, r.Client, m); err != nil {
			return ctrl.Result{}, err
		}
		d := &appsv1.Deployment{}
		switch err := r.Get(ctx, client.ObjectKey{Namespace: ob.Namespace, Name: m.sandboxName()}, d); {
		case apierrors.IsNotFound(err):
		case err != nil:
			return ctrl.Result{}, fmt.Errorf("get Deployment %s: %w", m.sandboxName(), err)
		default:
			sandbox = d
		}
	}
	st := orchestratorStatus(gs, ob, att, sandbox, missing, rv)
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

// server is the GarraServer key names, nil when there is none the
// manager can see: absent, or in a namespace a namespace-scoped manager
// does not watch (its cache holds no other; decideAttachment says so).
func (r *OrchestratorReconciler) server(ctx context.Context, key client.ObjectKey) (*garrav1alpha1.GarraServer, error) {
	if len(r.WatchNamespaces) > 0 && !slices.Contains(r.WatchNamespaces, key.Namespace) {
		return nil, nil
	}
	gs := &garrav1alpha1.GarraServer{}
	switch err := r.Get(ctx, key, gs); {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get GarraServer %s: %w", key, err)
	}
	return gs, nil
}

// reportView is the server's report on one Orchestrator as the status
// reads it: ok when there is one, known when the server has had a pass
// since the manager started.
type reportView struct {
	rep       memberReport
	ok, known bool
}

// orchestratorStatus is ob's status given its attachment, its sandbox
// Deployment (nil when absent), the Secret keys it names that its
// namespace lacks and the server's report on it. Conditions keep
// their lastTransitionTime while their status does not change.
func orchestratorStatus(gs *garrav1alpha1.GarraServer, ob *garrav1alpha1.Orchestrator, att attachment, sandbox *appsv1.Deployment, missing []secretRef, rv reportView) garrav1alpha1.AttachedOrchestratorStatus {
	st := garrav1alpha1.AttachedOrchestratorStatus{
		ObservedGeneration: ob.Generation,
		Conditions:         append([]metav1.Condition(nil), ob.Status.Conditions...),
	}
	set := conditionSetter(&st.Conditions, ob.Generation)
	put := func(typ string, c metav1.Condition) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: typ, Status: c.Status, Reason: c.Reason, Message: c.Message, ObservedGeneration: ob.Generation})
	}
	set(garrav1alpha1.ConditionAccepted, att.accepted, att.reason, att.message)
	if !att.accepted {
		const why = "not accepted: see the Accepted condition"
		set(garrav1alpha1.ConditionReady, false, garrav1alpha1.ReasonNotAccepted, why)
		set(garrav1alpha1.ConditionConfigApplied, false, garrav1alpha1.ReasonNotAccepted, why)
		set(garrav1alpha1.ConditionVerified, false, garrav1alpha1.ReasonNotAccepted, why)
		return st
	}
	m := attachedMember(gs, ob)
	st.Identity = m.ID
	st.Endpoint = Endpoint(gs)
	st.TokenSecret = tokenSecretName(m)
	st.WorkspaceClaim = m.workspaceName()
	st.SandboxEndpoint = m.sandboxURL()
	st.Quota = effectiveQuota(gs.Spec.Gateway.Quota, m.Quota)
	st.Suspended, st.LastCall = sleepStatus(m, sandbox)
	switch {
	case len(missing) > 0:
		// The team cannot read the server's status: say it here.
		set(garrav1alpha1.ConditionReady, false, garrav1alpha1.ReasonSecretMissing, missingSecretsMessage(ob.Namespace, missing))
	case rv.ok && rv.rep.failed != "":
		set(garrav1alpha1.ConditionReady, false, garrav1alpha1.ReasonApplyFailed, "the operator could not write its objects (retried): "+rv.rep.failed)
	case st.Suspended:
		set(garrav1alpha1.ConditionReady, true, garrav1alpha1.ReasonAvailable, "the sandbox is suspended while idle; the next call wakes it")
	case available(sandbox):
		set(garrav1alpha1.ConditionReady, true, garrav1alpha1.ReasonAvailable, "the sandbox "+m.sandboxName()+" has an available replica")
	default:
		set(garrav1alpha1.ConditionReady, false, garrav1alpha1.ReasonProgressing, "waiting for the sandbox Deployment "+m.sandboxName()+" to have an available replica")
	}
	switch {
	case !rv.known:
		// No pass of the server since the manager started: what an
		// earlier one said stands until the next says otherwise.
		st.Toolchain, st.TokenRotation = ob.Status.Toolchain, ob.Status.TokenRotation
		for _, typ := range []string{garrav1alpha1.ConditionConfigApplied, garrav1alpha1.ConditionVerified} {
			if c := meta.FindStatusCondition(st.Conditions, typ); c == nil || c.Reason == garrav1alpha1.ReasonNotAccepted {
				put(typ, metav1.Condition{Status: metav1.ConditionUnknown, Reason: garrav1alpha1.ReasonPending,
					Message: "waiting for the server's next pass"})
			}
		}
	case !rv.ok:
		put(garrav1alpha1.ConditionConfigApplied, metav1.Condition{Status: metav1.ConditionFalse, Reason: garrav1alpha1.ReasonPending,
			Message: "the server has not rendered this Orchestrator into the gateway's config yet"})
		put(garrav1alpha1.ConditionVerified, metav1.Condition{Status: metav1.ConditionFalse, Reason: ReasonNotChecked,
			Message: "the gateway has not checked this sandbox yet"})
	default:
		if rv.rep.generation == ob.Generation {
			put(garrav1alpha1.ConditionConfigApplied, rv.rep.applied)
		} else {
			put(garrav1alpha1.ConditionConfigApplied, metav1.Condition{Status: metav1.ConditionFalse, Reason: garrav1alpha1.ReasonPending,
				Message: fmt.Sprintf("the server has not rendered generation %d of this Orchestrator yet", ob.Generation)})
		}
		put(garrav1alpha1.ConditionVerified, memberVerified(rv.rep.verdict))
		if v := rv.rep.verdict; v != nil {
			st.Toolchain = v.Toolchain
		}
		if u := rv.rep.rotation; u != nil {
			st.TokenRotation = &garrav1alpha1.TokenRotationStatus{PreviousValidUntil: metav1.NewTime(u.Truncate(time.Second))}
		}
	}
	return st
}

// missingSecrets are the Secret keys m names (its tokenSecretRef and its
// credentials' secretRefs) that do not exist in m's namespace, the only one
// they can name.
func missingSecrets(ctx context.Context, c client.Reader, m member) ([]secretRef, error) {
	var missing []secretRef
	for _, ref := range namedSecretRefs(m) {
		sec := &corev1.Secret{}
		switch err := c.Get(ctx, client.ObjectKey{Namespace: m.at.Namespace, Name: ref.Secret}, sec); {
		case apierrors.IsNotFound(err):
			missing = append(missing, ref)
		case err != nil:
			return nil, fmt.Errorf("get Secret %s/%s: %w", m.at.Namespace, ref.Secret, err)
		default:
			if _, ok := sec.Data[ref.Key]; !ok {
				missing = append(missing, ref)
			}
		}
	}
	return missing, nil
}

// namedSecretRefs are the keys of Secrets m's spec names, as against the
// generated ones the operator creates itself.
func namedSecretRefs(m member) []secretRef {
	var refs []secretRef
	if m.TokenSecretRef != nil && usesToken(m.OrchestratorSettings) {
		refs = append(refs, orchTokenRef(m))
	}
	return append(refs, credentialRefs(m)...)
}

// missingSecretsMessage names each missing key and its field, what the
// gateway does meanwhile, and the rule: a Secret an Orchestrator names is
// in its own namespace.
func missingSecretsMessage(ns string, missing []secretRef) string {
	parts := make([]string, 0, len(missing))
	token := false
	for _, ref := range missing {
		parts = append(parts, fmt.Sprintf("%s: Secret %s key %s", ref.Field, ref.Secret, ref.Key))
		token = token || strings.HasSuffix(ref.Field, ".tokenSecretRef")
	}
	meanwhile := "the gateway sends that credential nowhere"
	if token {
		meanwhile = "the gateway accepts no token for this orchestrator"
		if len(missing) > 1 {
			meanwhile += " and sends a missing credential nowhere"
		}
	}
	return fmt.Sprintf("not found in namespace %s: %s (a Secret an Orchestrator names must be in its own namespace; until it is there, %s)",
		ns, strings.Join(parts, ", "), meanwhile)
}
