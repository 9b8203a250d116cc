package controllers

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/sandboxz"
)

func TestVerifiedFrom(t *testing.T) {
	ok := sandboxz.Verdict{Verified: true, Tools: 6, Message: "ok"}
	refused := sandboxz.Verdict{Reason: sandboxz.TokenRefused, Message: "refused"}
	for _, tc := range []struct {
		name     string
		orchs    []string
		rep      sandboxz.Report
		err      error
		status   metav1.ConditionStatus
		reason   string
		message  string
		pending  bool
		rowsWant map[string]string // orchestrator → verifiedReason ("" = verified)
		asleep   map[string]bool
	}{
		{"none", nil, sandboxz.Report{}, nil, metav1.ConditionTrue, garrav1alpha1.ReasonNoOrchestrators, "the spec lists no orchestrator", false, map[string]string{}, nil},
		{"all verified", []string{"a", "b"}, sandboxz.Report{Sandboxes: map[string]sandboxz.Verdict{"a": ok, "b": ok}}, nil,
			metav1.ConditionTrue, garrav1alpha1.ReasonVerified, "the gateway's MCP handshake with every sandbox works", false, map[string]string{"a": "", "b": ""}, nil},
		{"one refused", []string{"a", "b"}, sandboxz.Report{Sandboxes: map[string]sandboxz.Verdict{"a": ok, "b": refused}}, nil,
			metav1.ConditionFalse, garrav1alpha1.ReasonNotVerified, "not verified: b (TokenRefused)", false, map[string]string{"a": "", "b": sandboxz.TokenRefused}, nil},
		{"one not checked yet", []string{"a", "new"}, sandboxz.Report{Sandboxes: map[string]sandboxz.Verdict{"a": ok, "gone": ok}}, nil,
			metav1.ConditionFalse, garrav1alpha1.ReasonNotVerified, "not verified: new (NotChecked)", true, map[string]string{"a": "", "new": ReasonNotChecked}, nil},
		{"gateway not asked", []string{"a"}, sandboxz.Report{}, errors.New("HTTP 401"),
			metav1.ConditionUnknown, garrav1alpha1.ReasonPending, "the gateway could not be asked about its sandboxes: HTTP 401", true, map[string]string{"a": ReasonNotChecked}, nil},
		{"one suspended, the gateway unable to reach it", []string{"a", "b"}, sandboxz.Report{Sandboxes: map[string]sandboxz.Verdict{"a": ok, "b": {Reason: sandboxz.Unreachable}}}, nil,
			metav1.ConditionTrue, garrav1alpha1.ReasonVerified, "the gateway's MCP handshake with every sandbox works", false,
			map[string]string{"a": "", "b": ReasonSuspended}, map[string]bool{"b": true}},
	} {
		v := verifiedFrom(tc.orchs, tc.asleep, tc.rep, tc.err)
		if v.cond.Status != tc.status || v.cond.Reason != tc.reason || v.cond.Message != tc.message || v.pending != tc.pending {
			t.Errorf("%s: %+v pending %v", tc.name, v.cond, v.pending)
		}
		if len(v.byName) != len(tc.rowsWant) {
			t.Errorf("%s: rows %v", tc.name, v.byName)
		}
		for o, reason := range tc.rowsWant {
			if got := v.byName[o]; got.Reason != reason || got.Verified != (reason == "") {
				t.Errorf("%s: %s = %+v, want reason %q", tc.name, o, got, reason)
			}
		}
	}
}
