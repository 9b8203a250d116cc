package controllers

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/sandboxz"
)

// attachedReports is what this pass learned about each Orchestrator that
// names the server: for a member, whether the gateway runs a config with
// its current generation, its handshake verdict and its token overlap; for
// one the whole set refused, why. When the gateway reports running the
// config this pass rendered, the members' generations in it are recorded
// as loaded first.
func (r *GarraServerReconciler) attachedReports(s *reconcileState, w observed) map[string]memberReport {
	key := client.ObjectKeyFromObject(s.gs)
	gens := map[string]int64{}
	for _, m := range s.members {
		if m.attached {
			gens[m.ID] = m.ob.Generation
		}
	}
	if w.applied != nil && w.applied.Status == metav1.ConditionTrue {
		r.Reports.confirmLoaded(key, gens)
	}
	reps := make(map[string]memberReport, len(gens)+len(s.clashes))
	for _, m := range s.members {
		if !m.attached {
			continue
		}
		rep := memberReport{generation: m.ob.Generation}
		loaded, ok := r.Reports.loadedGen(key, m.ID)
		rep.applied = memberApplied(s, w, ok && loaded == m.ob.Generation)
		if w.verified != nil {
			v := w.verified.byName[m.ID]
			rep.verdict = &v
		}
		if u, ok := s.rotations[m.ID]; ok {
			rep.rotation = &u
		}
		rep.failed = s.memberFailed[m.ID]
		reps[m.ID] = rep
	}
	for id, att := range s.clashes {
		reps[id] = memberReport{refused: &att}
	}
	return reps
}

// memberApplied is an attached member's ConfigApplied condition: true once
// the gateway has reported running a config with its current generation
// (loaded), otherwise why not, from the server's own condition.
func memberApplied(s *reconcileState, w observed, loaded bool) metav1.Condition {
	who := fmt.Sprintf("GarraServer %s/%s", s.gs.Namespace, s.gs.Name)
	switch {
	case loaded:
		return metav1.Condition{Status: metav1.ConditionTrue, Reason: garrav1alpha1.ReasonApplied,
			Message: "the gateway of " + who + " reports running a config with this generation of the Orchestrator"}
	case s.invalid != "":
		return metav1.Condition{Status: metav1.ConditionFalse, Reason: garrav1alpha1.ReasonPending,
			Message: "the spec of " + who + " is invalid, so no config was rendered; the platform team sees why in its Ready condition"}
	case w.applied == nil:
		return metav1.Condition{Status: metav1.ConditionFalse, Reason: garrav1alpha1.ReasonPending,
			Message: "the last pass of " + who + " rendered no config"}
	case w.applied.Reason == garrav1alpha1.ReasonNotProbed:
		return metav1.Condition{Status: metav1.ConditionUnknown, Reason: garrav1alpha1.ReasonNotProbed, Message: w.applied.Message}
	case w.applied.Status == metav1.ConditionTrue:
		// The gateway runs the rendered config, which has this member: it
		// was recorded as loaded above, so this is not reached.
		return metav1.Condition{Status: metav1.ConditionTrue, Reason: garrav1alpha1.ReasonApplied, Message: w.applied.Message}
	}
	return metav1.Condition{Status: metav1.ConditionFalse, Reason: w.applied.Reason,
		Message: "not yet in the config the gateway of " + who + " runs: " + w.applied.Message}
}

// memberVerified is an Orchestrator's Verified condition from the
// gateway's verdict (nil: the gateway is not asked).
func memberVerified(v *sandboxz.Verdict) metav1.Condition {
	switch {
	case v == nil:
		return metav1.Condition{Status: metav1.ConditionUnknown, Reason: garrav1alpha1.ReasonNotProbed,
			Message: "the operator does not ask the gateway about its sandboxes"}
	case v.Reason == ReasonSuspended:
		// As on the server: asleep on purpose is not a failure.
		return metav1.Condition{Status: metav1.ConditionTrue, Reason: ReasonSuspended, Message: v.Message}
	case v.Verified:
		msg := v.Message
		if msg == "" {
			msg = "the gateway's MCP handshake with its sandbox works"
		}
		return metav1.Condition{Status: metav1.ConditionTrue, Reason: garrav1alpha1.ReasonVerified, Message: oneLine(msg)}
	}
	reason := v.Reason
	if reason == "" {
		reason = garrav1alpha1.ReasonNotVerified
	}
	return metav1.Condition{Status: metav1.ConditionFalse, Reason: reason, Message: oneLine(v.Message)}
}

// attachedSummary counts the Orchestrators naming the server and names
// the first few needing a look (in NAMESPACE/NAME order, at most
// MaxAttachedSample); nil while none names it.
func attachedSummary(s *reconcileState, w observed, reps map[string]memberReport) *garrav1alpha1.AttachedOrchestratorsStatus {
	sum := &garrav1alpha1.AttachedOrchestratorsStatus{}
	var problems []refusal
	for _, r := range s.refused {
		sum.Refused++
		problems = append(problems, r)
	}
	for _, m := range s.members {
		if !m.attached {
			continue
		}
		sum.Accepted++
		rep := reps[m.ID]
		d := w.sandboxes[m.ID]
		ready := rep.failed == "" && (available(d) || (idle(m) && suspended(d)))
		verified := memberVerified(rep.verdict)
		applied := rep.applied.Status == metav1.ConditionTrue
		if ready {
			sum.Ready++
		}
		if verified.Status == metav1.ConditionTrue {
			sum.Verified++
		}
		if applied {
			sum.ConfigApplied++
		}
		switch {
		case rep.failed != "":
			problems = append(problems, refusal{ID: m.ID, Reason: garrav1alpha1.ReasonApplyFailed})
		case !ready:
			problems = append(problems, refusal{ID: m.ID, Reason: garrav1alpha1.ReasonProgressing})
		case verified.Status != metav1.ConditionTrue && verified.Reason != garrav1alpha1.ReasonNotProbed:
			problems = append(problems, refusal{ID: m.ID, Reason: verified.Reason})
		case !applied && rep.applied.Reason != garrav1alpha1.ReasonNotProbed:
			problems = append(problems, refusal{ID: m.ID, Reason: rep.applied.Reason})
		}
	}
	if sum.Accepted == 0 && sum.Refused == 0 {
		return nil
	}
	sortRefusals(problems)
	for _, p := range problems[:min(len(problems), garrav1alpha1.MaxAttachedSample)] {
		sum.NotReady = append(sum.NotReady, garrav1alpha1.AttachedOrchestratorProblem{Name: p.ID, Reason: p.Reason})
	}
	return sum
}
