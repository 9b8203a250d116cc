package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// observed is what the status is derived from.
type observed struct {
	// gateway is the gateway Deployment, nil if absent.
	gateway *appsv1.Deployment
	// sandboxes are the sandbox Deployments by orchestrator, absent ones missing.
	sandboxes map[string]*appsv1.Deployment
	missing   []secretRef
	invalid   string
	// failed is the reconcile step that failed on this pass, and why.
	failed string
	// configHash is the hash of the rendered config.yml, "" when none was
	// rendered; applied is the ConfigApplied condition (nil: unchanged).
	configHash string
	applied    *metav1.Condition
	// rotations are the orchestrators with a previous token still valid.
	rotations map[string]time.Time
	// tokenReview is reconcileState.tokenReview.
	tokenReview string
	// verified is the gateway's report on its sandboxes (nil: not asked).
	verified *verification
	// attached is the summary of the Orchestrators naming it.
	attached *garrav1alpha1.AttachedOrchestratorsStatus
}

// available reports whether d has an available replica.
func available(d *appsv1.Deployment) bool { return d != nil && d.Status.AvailableReplicas > 0 }

// computeStatus derives the status of gs from the world. Conditions keep
// their lastTransitionTime while their status does not change.
func computeStatus(gs *garrav1alpha1.GarraServer, w observed) garrav1alpha1.GarraServerStatus {
	st := garrav1alpha1.GarraServerStatus{
		ObservedGeneration: gs.Generation,
		Endpoint:           Endpoint(gs),
		Conditions:         append([]metav1.Condition(nil), gs.Status.Conditions...),
	}
	var notReady []string
	nSuspended := 0
	for _, m := range inlineMembers(gs) {
		d := w.sandboxes[m.Name]
		ok := available(d)
		asleep := idle(m) && suspended(d)
		switch {
		case asleep:
			nSuspended++ // suspended on purpose: its next call wakes it
		case !ok:
			notReady = append(notReady, m.Name)
		}
		row := garrav1alpha1.OrchestratorStatus{
			Name:            m.Name,
			Ready:           ok,
			TokenSecret:     tokenSecretName(m),
			WorkspaceClaim:  m.workspaceName(),
			SandboxEndpoint: m.sandboxURL(),
			TokenRotation:   rotationStatus(w.rotations, m.ID),
			Quota:           effectiveQuota(gs.Spec.Gateway.Quota, m.Quota),
		}
		row.Suspended, row.LastCall = sleepStatus(m, d)
		if w.verified != nil {
			v := w.verified.byName[m.Name]
			row.Verified, row.VerifiedReason, row.VerifiedMessage, row.Toolchain = v.Verified, v.Reason, v.Message, v.Toolchain
		}
		st.Orchestrators = append(st.Orchestrators, row)
	}
	st.AttachedOrchestrators = w.attached
	st.ConfigHash = w.configHash
	if st.ConfigHash == "" {
		st.ConfigHash = gs.Status.ConfigHash
	}
	total := len(gs.Spec.Orchestrators)
	st.OrchestratorsReady = fmt.Sprintf("%d/%d", total-len(notReady)-nSuspended, total)

	set := conditionSetter(&st.Conditions, gs.Generation)

	if c := w.applied; c != nil {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: garrav1alpha1.ConditionConfigApplied, Status: c.Status, Reason: c.Reason, Message: c.Message, ObservedGeneration: gs.Generation,
		})
	}
	if v := w.verified; v != nil {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: garrav1alpha1.ConditionVerified, Status: v.cond.Status, Reason: v.cond.Reason, Message: v.cond.Message, ObservedGeneration: gs.Generation,
		})
	}

	if w.tokenReview != "" {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: garrav1alpha1.ConditionTokenReviewAccess, Status: metav1.ConditionUnknown,
			Reason: garrav1alpha1.ReasonClusterBindingExternal, Message: w.tokenReview, ObservedGeneration: gs.Generation,
		})
	} else {
		meta.RemoveStatusCondition(&st.Conditions, garrav1alpha1.ConditionTokenReviewAccess)
	}

	gwOK := false
	switch {
	case len(w.missing) > 0:
		parts := make([]string, 0, len(w.missing))
		for _, m := range w.missing {
			name := m.Secret
			if m.Namespace != "" {
				name = m.Namespace + "/" + m.Secret
			}
			parts = append(parts, fmt.Sprintf("Secret %s key %s (%s)", name, m.Key, m.Field))
		}
		set(garrav1alpha1.ConditionGatewayReady, false, garrav1alpha1.ReasonSecretMissing, "not found: "+strings.Join(parts, ", "))
	case available(w.gateway):
		gwOK = true
		set(garrav1alpha1.ConditionGatewayReady, true, garrav1alpha1.ReasonAvailable, "the gateway has an available replica")
	default:
		set(garrav1alpha1.ConditionGatewayReady, false, garrav1alpha1.ReasonProgressing, "waiting for the gateway Deployment "+gatewayName(gs)+" to have an available replica")
	}

	orchOK := len(notReady) == 0
	switch {
	case total == 0:
		set(garrav1alpha1.ConditionOrchestratorsReady, true, garrav1alpha1.ReasonNoOrchestrators, "the spec lists no orchestrator")
	case orchOK && nSuspended > 0:
		set(garrav1alpha1.ConditionOrchestratorsReady, true, garrav1alpha1.ReasonAvailable,
			fmt.Sprintf("%s sandboxes available, %d suspended while idle (the next call wakes it)", st.OrchestratorsReady, nSuspended))
	case orchOK:
		set(garrav1alpha1.ConditionOrchestratorsReady, true, garrav1alpha1.ReasonAvailable, fmt.Sprintf("%s sandboxes available", st.OrchestratorsReady))
	default:
		set(garrav1alpha1.ConditionOrchestratorsReady, false, garrav1alpha1.ReasonProgressing,
			fmt.Sprintf("%s sandboxes available; waiting for %s", st.OrchestratorsReady, strings.Join(notReady, ", ")))
	}

	switch {
	case w.invalid != "":
		set(garrav1alpha1.ConditionReady, false, garrav1alpha1.ReasonInvalidSpec, w.invalid)
	case w.failed != "":
		set(garrav1alpha1.ConditionReady, false, garrav1alpha1.ReasonApplyFailed, w.failed)
	case gwOK && orchOK:
		set(garrav1alpha1.ConditionReady, true, garrav1alpha1.ReasonReady, "the gateway and every sandbox are available")
	default:
		var why []string
		if !gwOK {
			why = append(why, garrav1alpha1.ConditionGatewayReady)
		}
		if !orchOK {
			why = append(why, garrav1alpha1.ConditionOrchestratorsReady)
		}
		set(garrav1alpha1.ConditionReady, false, garrav1alpha1.ReasonNotReady, "not yet: "+strings.Join(why, ", ")+" is False")
	}
	return st
}

// writeStatus observes the Deployments, computes the status and patches
// the status subresource only when it differs. Events mark a condition
// turning to InvalidSpec or SecretMissing, and orchestrators that are new.
func (r *GarraServerReconciler) writeStatus(ctx context.Context, s *reconcileState) error {
	gs := s.gs
	w := observed{sandboxes: map[string]*appsv1.Deployment{}, missing: serverMissing(gs, s.members, s.missing), invalid: s.invalid, failed: s.failed, rotations: s.rotations, tokenReview: s.tokenReview}
	var err error
	if w.gateway, err = r.deployment(ctx, gs.Namespace, gatewayName(gs)); err != nil {
		return err
	}
	if s.configYAML != "" && s.invalid == "" {
		w.configHash = ConfigHash(s.configYAML)
		w.applied = r.probeConfig(ctx, gs, w.gateway, w.configHash)
		if w.applied.Status != metav1.ConditionTrue && w.applied.Reason != garrav1alpha1.ReasonNotProbed {
			s.requeueAt(ConfigPendingRequeue)
		}
	}
	for _, o := range gs.Spec.Orchestrators {
		d, err := r.deployment(ctx, gs.Namespace, sandboxName(gs, o.Name))
		if err != nil {
			return err
		}
		w.sandboxes[o.Name] = d
	}
	// Attached sandboxes by identity, which has a '/' no inline name has.
	for _, m := range s.members {
		if !m.attached {
			continue
		}
		d, err := r.deployment(ctx, m.at.Namespace, m.sandboxName())
		if err != nil {
			return err
		}
		w.sandboxes[m.ID] = d
	}
	if s.invalid == "" {
		w.verified = r.verifySandboxes(ctx, s, w.gateway, w.sandboxes)
	}
	if s.failed == "" {
		reps := r.attachedReports(s, w)
		w.attached = attachedSummary(s, w, reps)
		r.Reports.publish(client.ObjectKeyFromObject(gs), reps)
	} else {
		// A pass that stopped early saw only part of them: keep the last
		// summary, and the reports the Orchestrators show.
		w.attached = gs.Status.AttachedOrchestrators
	}
	st := computeStatus(gs, w)
	if equality.Semantic.DeepEqual(gs.Status, st) {
		return nil
	}
	old := gs.DeepCopy()
	gs.Status = st
	if err := r.Status().Patch(ctx, gs, client.MergeFrom(old), client.FieldOwner(FieldOwner)); err != nil {
		return err
	}
	r.statusEvents(old, gs)
	return nil
}

func (r *GarraServerReconciler) statusEvents(old, gs *garrav1alpha1.GarraServer) {
	turned := func(typ, reason string) *metav1.Condition {
		c := meta.FindStatusCondition(gs.Status.Conditions, typ)
		if c == nil || c.Reason != reason {
			return nil
		}
		if p := meta.FindStatusCondition(old.Status.Conditions, typ); p != nil && p.Reason == reason && p.Message == c.Message {
			return nil
		}
		return c
	}
	if c := turned(garrav1alpha1.ConditionReady, garrav1alpha1.ReasonInvalidSpec); c != nil {
		r.event(gs, true, garrav1alpha1.EventInvalidSpec, "Validate", "%s", c.Message)
	}
	if c := turned(garrav1alpha1.ConditionReady, garrav1alpha1.ReasonApplyFailed); c != nil {
		r.event(gs, true, garrav1alpha1.EventApplyFailed, "Apply", "%s", c.Message)
	}
	if c := turned(garrav1alpha1.ConditionGatewayReady, garrav1alpha1.ReasonSecretMissing); c != nil {
		r.event(gs, true, garrav1alpha1.EventSecretMissing, "Read", "%s", c.Message)
	}
	if meta.IsStatusConditionPresentAndEqual(gs.Status.Conditions, garrav1alpha1.ConditionReady, metav1.ConditionFalse) &&
		meta.FindStatusCondition(gs.Status.Conditions, garrav1alpha1.ConditionReady).Reason == garrav1alpha1.ReasonInvalidSpec {
		return // nothing was applied
	}
	had := map[string]bool{}
	for _, o := range old.Status.Orchestrators {
		had[o.Name] = true
	}
	for _, o := range gs.Status.Orchestrators {
		if !had[o.Name] {
			sandbox := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: sandboxName(gs, o.Name), Namespace: gs.Namespace}}
			r.eventAbout(gs, sandbox, false, garrav1alpha1.EventOrchestratorAdded, "Create", "orchestrator %s added: sandbox %s, workspace %s", o.Name, o.SandboxEndpoint, o.WorkspaceClaim)
		}
	}
}

// probeConfig asks the gateway which config it runs and turns the answer
// into the ConfigApplied condition.
// A gateway without an available replica is not asked: its Service has no
// endpoint, and the question would only wait for a timeout.
func (r *GarraServerReconciler) probeConfig(ctx context.Context, gs *garrav1alpha1.GarraServer, gateway *appsv1.Deployment, want string) *metav1.Condition {
	if r.Probe == nil {
		return &metav1.Condition{Status: metav1.ConditionUnknown, Reason: garrav1alpha1.ReasonNotProbed,
			Message: "the operator does not ask the gateway which config it runs"}
	}
	if !available(gateway) {
		return &metav1.Condition{Status: metav1.ConditionFalse, Reason: garrav1alpha1.ReasonPending,
			Message: "waiting for the gateway Deployment " + gatewayName(gs) + " to have an available replica before asking it which config it runs"}
	}
	url := GatewayReadyzURL(gs)
	if r.ProbeURL != nil {
		url = r.ProbeURL(gs)
	}
	got, rejected, err := r.Probe(ctx, url)
	status, reason, msg := configApplied(want, got, rejected, err)
	return &metav1.Condition{Status: status, Reason: reason, Message: msg}
}

// conditionSetter sets a True or False condition of generation gen in
// conds; SetStatusCondition keeps its lastTransitionTime while its status
// does not change.
func conditionSetter(conds *[]metav1.Condition, gen int64) func(typ string, ok bool, reason, msg string) {
	return func(typ string, ok bool, reason, msg string) {
		status := metav1.ConditionFalse
		if ok {
			status = metav1.ConditionTrue
		}
		meta.SetStatusCondition(conds, metav1.Condition{
			Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: gen,
		})
	}
}

// tokenSecretName is the Secret holding m's bearer token, "" for the
// ServiceAccount and OIDC modes, which hold none.
func tokenSecretName(m member) string {
	if !usesToken(m.OrchestratorSettings) {
		return ""
	}
	return orchTokenRef(m).Secret
}

// sleepStatus is whether m's sandbox d is suspended and when it was last
// called, for an idle-enabled m.
func sleepStatus(m member, d *appsv1.Deployment) (bool, *metav1.Time) {
	if !idle(m) || d == nil {
		return false, nil
	}
	var last *metav1.Time
	if t, ok := lastCall(d); ok {
		last = &metav1.Time{Time: t.Truncate(time.Second)}
	}
	return suspended(d), last
}

// rotationStatus is o's overlap in progress, or nil.
func rotationStatus(rotations map[string]time.Time, o string) *garrav1alpha1.TokenRotationStatus {
	u, ok := rotations[o]
	if !ok {
		return nil
	}
	return &garrav1alpha1.TokenRotationStatus{PreviousValidUntil: metav1.NewTime(u.Truncate(time.Second))}
}

func (r *GarraServerReconciler) deployment(ctx context.Context, ns, name string) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("get Deployment %s: %w", name, err)
	}
	return d, nil
}
