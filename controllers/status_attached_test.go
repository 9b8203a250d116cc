package controllers

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/sandboxz"
)

func TestOrchestratorStatusFromReport(t *testing.T) {
	gs := testServer()
	ob := &garrav1alpha1.Orchestrator{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "ci", Generation: 4}}
	accepted := attachment{accepted: true, reason: garrav1alpha1.ReasonAccepted, message: "attached"}
	applied := metav1.Condition{Status: metav1.ConditionTrue, Reason: garrav1alpha1.ReasonApplied, Message: "loaded"}
	until := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	earlier := []metav1.Condition{
		{Type: garrav1alpha1.ConditionConfigApplied, Status: metav1.ConditionTrue, Reason: garrav1alpha1.ReasonApplied, Message: "from before the restart"},
	}
	tests := []struct {
		name           string
		att            attachment
		rv             reportView
		had            []metav1.Condition
		applied, verif [2]string // status, reason
		toolchain      []string
		rotation       bool
	}{
		{name: "not accepted: both False, NotAccepted", att: attachment{reason: garrav1alpha1.ReasonNotAllowedByServer},
			applied: [2]string{"False", garrav1alpha1.ReasonNotAccepted}, verif: [2]string{"False", garrav1alpha1.ReasonNotAccepted}},
		{name: "no pass of the server since the start: what was said stands", att: accepted, had: earlier,
			applied: [2]string{"True", garrav1alpha1.ReasonApplied}, verif: [2]string{"Unknown", garrav1alpha1.ReasonPending}},
		{name: "the server's pass did not have it yet", att: accepted, rv: reportView{known: true},
			applied: [2]string{"False", garrav1alpha1.ReasonPending}, verif: [2]string{"False", ReasonNotChecked}},
		{name: "rendered an older generation", att: accepted,
			rv:      reportView{known: true, ok: true, rep: memberReport{generation: 3, applied: applied, verdict: &sandboxz.Verdict{Verified: true}}},
			applied: [2]string{"False", garrav1alpha1.ReasonPending}, verif: [2]string{"True", garrav1alpha1.ReasonVerified}},
		{name: "loaded and verified, with its toolchain and overlap", att: accepted,
			rv: reportView{known: true, ok: true, rep: memberReport{generation: 4, applied: applied, rotation: &until,
				verdict: &sandboxz.Verdict{Verified: true, Toolchain: []string{"bash"}}}},
			applied: [2]string{"True", garrav1alpha1.ReasonApplied}, verif: [2]string{"True", garrav1alpha1.ReasonVerified},
			toolchain: []string{"bash"}, rotation: true},
		{name: "the gateway refused its sandbox's token", att: accepted,
			rv:      reportView{known: true, ok: true, rep: memberReport{generation: 4, applied: applied, verdict: &sandboxz.Verdict{Reason: sandboxz.TokenRefused, Message: "401"}}},
			applied: [2]string{"True", garrav1alpha1.ReasonApplied}, verif: [2]string{"False", sandboxz.TokenRefused}},
		{name: "not asked", att: accepted, rv: reportView{known: true, ok: true, rep: memberReport{generation: 4, applied: applied}},
			applied: [2]string{"True", garrav1alpha1.ReasonApplied}, verif: [2]string{"Unknown", garrav1alpha1.ReasonNotProbed}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := ob.DeepCopy()
			o.Status.Conditions = tt.had
			st := orchestratorStatus(gs, o, tt.att, &appsv1.Deployment{}, nil, tt.rv)
			for _, c := range []struct {
				typ  string
				want [2]string
			}{{garrav1alpha1.ConditionConfigApplied, tt.applied}, {garrav1alpha1.ConditionVerified, tt.verif}} {
				got := meta.FindStatusCondition(st.Conditions, c.typ)
				if got == nil || string(got.Status) != c.want[0] || got.Reason != c.want[1] {
					t.Errorf("%s = %+v, want %v", c.typ, got, c.want)
				}
			}
			if fmt.Sprint(st.Toolchain) != fmt.Sprint(tt.toolchain) || (st.TokenRotation != nil) != tt.rotation {
				t.Errorf("toolchain %v rotation %v", st.Toolchain, st.TokenRotation)
			}
			if tt.rotation && !st.TokenRotation.PreviousValidUntil.Time.Equal(until.Truncate(time.Second)) {
				t.Errorf("rotation until %v", st.TokenRotation.PreviousValidUntil)
			}
		})
	}
}

// TestAttachedSummaryIsBounded: counts for all, names for the first ten
// only, in order.
func TestAttachedSummaryIsBounded(t *testing.T) {
	gs := testServer()
	s := &reconcileState{gs: gs}
	w := observed{sandboxes: map[string]*appsv1.Deployment{}}
	reps := map[string]memberReport{}
	for i := range 1000 {
		ob := &garrav1alpha1.Orchestrator{ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("team-%03d", i), Name: "ci", Generation: 1}}
		m := attachedMember(gs, ob)
		s.members = append(s.members, m)
		if i%2 == 0 {
			w.sandboxes[m.ID] = &appsv1.Deployment{Status: appsv1.DeploymentStatus{AvailableReplicas: 1}}
		}
		reps[m.ID] = memberReport{generation: 1, applied: metav1.Condition{Status: metav1.ConditionTrue},
			verdict: &sandboxz.Verdict{Verified: i%4 == 0, Reason: map[bool]string{true: "", false: sandboxz.Unreachable}[i%4 == 0]}}
	}
	s.refused = []refusal{{ID: "aaa/first", Reason: garrav1alpha1.ReasonNameClash}}
	sum := attachedSummary(s, w, reps)
	if sum.Accepted != 1000 || sum.Refused != 1 || sum.Ready != 500 || sum.Verified != 250 || sum.ConfigApplied != 1000 {
		t.Fatalf("counts %+v", sum)
	}
	if len(sum.NotReady) != garrav1alpha1.MaxAttachedSample {
		t.Fatalf("%d named, want %d", len(sum.NotReady), garrav1alpha1.MaxAttachedSample)
	}
	want := []garrav1alpha1.AttachedOrchestratorProblem{
		{Name: "aaa/first", Reason: garrav1alpha1.ReasonNameClash},
		{Name: "team-001/ci", Reason: garrav1alpha1.ReasonProgressing},
		{Name: "team-002/ci", Reason: sandboxz.Unreachable},
	}
	for i, p := range want {
		if sum.NotReady[i] != p {
			t.Errorf("notReady[%d] = %+v, want %+v", i, sum.NotReady[i], p)
		}
	}
	if attachedSummary(&reconcileState{gs: gs}, w, nil) != nil {
		t.Error("a server no Orchestrator names has no summary")
	}
}

// TestUnannotatePatch: the annotation is removed only while it holds the
// value handled; its '/' is escaped as JSON Pointer wants.
func TestUnannotatePatch(t *testing.T) {
	ob := &garrav1alpha1.Orchestrator{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{garrav1alpha1.AnnotationRotateToken: `now "1"`}}}
	want := `[{"op":"test","path":"/metadata/annotations/garra.garraia.io~1rotate-token","value":"now \"1\""},` +
		`{"op":"remove","path":"/metadata/annotations/garra.garraia.io~1rotate-token"}]`
	if got := string(unannotatePatch(ob)); got != want {
		t.Errorf("patch\n%s\nwant\n%s", got, want)
	}
}
