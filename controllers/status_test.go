package controllers

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

func dep(avail int32) *appsv1.Deployment {
	return &appsv1.Deployment{Status: appsv1.DeploymentStatus{AvailableReplicas: avail}}
}

func TestComputeStatus(t *testing.T) {
	type conds struct{ ready, gateway, orchs string } // reasons
	tests := []struct {
		name      string
		w         observed
		noOrchs   bool
		want      conds
		wantCount string
		wantRows  map[string]bool
	}{
		{"nothing available yet", observed{},
			false, conds{"NotReady", "Progressing", "Progressing"}, "0/2", map[string]bool{"badgood": false, "n8n-prod": false}},
		{"one sandbox available", observed{gateway: dep(1), sandboxes: map[string]*appsv1.Deployment{"badgood": dep(1), "n8n-prod": dep(0)}},
			false, conds{"NotReady", "Available", "Progressing"}, "1/2", map[string]bool{"badgood": true, "n8n-prod": false}},
		{"all available", observed{gateway: dep(1), sandboxes: map[string]*appsv1.Deployment{"badgood": dep(1), "n8n-prod": dep(2)}},
			false, conds{"Ready", "Available", "Available"}, "2/2", map[string]bool{"badgood": true, "n8n-prod": true}},
		{"a secret is missing", observed{gateway: dep(1), sandboxes: map[string]*appsv1.Deployment{"badgood": dep(1), "n8n-prod": dep(1)},
			missing: []secretRef{{Secret: "llm-keys", Key: "openrouter", Field: "spec.llm.apiKeySecretRef"}}},
			false, conds{"NotReady", "SecretMissing", "Available"}, "2/2", nil},
		{"invalid spec", observed{invalid: "spec.image is empty"},
			false, conds{"InvalidSpec", "Progressing", "Progressing"}, "0/2", nil},
		{"a step failed", observed{gateway: dep(1), sandboxes: map[string]*appsv1.Deployment{"badgood": dep(1), "n8n-prod": dep(1)},
			failed: "apply gateway: apply agents/team-a-gateway: forbidden"},
			false, conds{"ApplyFailed", "Available", "Available"}, "2/2", nil},
		{"no orchestrators", observed{gateway: dep(1)},
			true, conds{"Ready", "Available", "NoOrchestrators"}, "0/0", map[string]bool{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gs := testServer()
			if tc.noOrchs {
				gs.Spec.Orchestrators = nil
			}
			st := computeStatus(gs, tc.w)
			if st.ObservedGeneration != 3 || st.Endpoint != "http://team-a-gateway.agents.svc:3888/mcp" || st.OrchestratorsReady != tc.wantCount {
				t.Errorf("status = %+v", st)
			}
			for typ, reason := range map[string]string{"Ready": tc.want.ready, "GatewayReady": tc.want.gateway, "OrchestratorsReady": tc.want.orchs} {
				c := meta.FindStatusCondition(st.Conditions, typ)
				if c == nil || c.Reason != reason || c.ObservedGeneration != 3 || c.Message == "" {
					t.Errorf("%s = %+v, want reason %s", typ, c, reason)
					continue
				}
				if (c.Status == metav1.ConditionTrue) != (reason == "Ready" || reason == "Available" || reason == "NoOrchestrators") {
					t.Errorf("%s status %s with reason %s", typ, c.Status, reason)
				}
			}
			if tc.wantRows != nil {
				if len(st.Orchestrators) != len(tc.wantRows) {
					t.Errorf("rows = %+v", st.Orchestrators)
				}
				for _, row := range st.Orchestrators {
					if row.Ready != tc.wantRows[row.Name] {
						t.Errorf("%s ready = %v", row.Name, row.Ready)
					}
				}
			}
		})
	}

	t.Run("rows", func(t *testing.T) {
		st := computeStatus(testServer(), observed{})
		want := []garrav1alpha1.OrchestratorStatus{
			{Name: "badgood", TokenSecret: "team-a-orch-badgood", WorkspaceClaim: "team-a-ws-badgood", SandboxEndpoint: "http://team-a-sandbox-badgood.agents.svc:8080/mcp"},
			{Name: "n8n-prod", TokenSecret: "n8n-token", WorkspaceClaim: "team-a-ws-n8n-prod", SandboxEndpoint: "http://team-a-sandbox-n8n-prod.agents.svc:8080/mcp"},
		}
		if !equality.Semantic.DeepEqual(st.Orchestrators, want) {
			t.Errorf("rows = %+v", st.Orchestrators)
		}
	})

	t.Run("transition time kept while the status holds", func(t *testing.T) {
		gs := testServer()
		past := metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))
		gs.Status.Conditions = []metav1.Condition{{Type: "GatewayReady", Status: metav1.ConditionFalse, Reason: "Progressing", LastTransitionTime: past}}
		st := computeStatus(gs, observed{})
		if c := meta.FindStatusCondition(st.Conditions, "GatewayReady"); !c.LastTransitionTime.Equal(&past) {
			t.Errorf("lastTransitionTime = %v, want %v", c.LastTransitionTime, past)
		}
		st = computeStatus(gs, observed{gateway: dep(1)})
		if c := meta.FindStatusCondition(st.Conditions, "GatewayReady"); c.LastTransitionTime.Equal(&past) {
			t.Error("lastTransitionTime not moved on a transition")
		}
	})
}

func TestInvalidSpec(t *testing.T) {
	tests := []struct {
		name             string
		mutate           func(*garrav1alpha1.GarraServer)
		defGarra, defSbx string
		want             string // substring; "" = valid
	}{
		{"valid", nil, "g", "s", ""},
		{"image from spec", func(gs *garrav1alpha1.GarraServer) { gs.Spec.Image = "x" }, "", "s", ""},
		{"no gateway image", nil, "", "s", "spec.image is empty"},
		{"no sandbox image", nil, "g", "", "spec.orchestrators[badgood].sandbox.image"},
		{"name too long for a Service", func(gs *garrav1alpha1.GarraServer) {
			gs.Name = "a-very-long-garra-server-name-that-goes-on"
			gs.Spec.Orchestrators[0].Name = "and-an-orchestrator-name-too"
		}, "g", "s", "spec.orchestrators[and-an-orchestrator-name-too].name"},
		{"orchestrator named owner", func(gs *garrav1alpha1.GarraServer) { gs.Spec.Orchestrators[0].Name = "owner" }, "g", "s",
			`spec.orchestrators[owner].name: "owner" is reserved`},
		{"name with a dot", func(gs *garrav1alpha1.GarraServer) { gs.Name = "team.a" }, "g", "s", "metadata.name"},
		{"zero workspace", func(gs *garrav1alpha1.GarraServer) { gs.Spec.Orchestrators[1].Workspace.Size = resource.MustParse("0") }, "g", "s",
			"spec.orchestrators[n8n-prod].workspace.size must be positive"},
		{"telemetry endpoint without a scheme", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Telemetry = &garrav1alpha1.TelemetrySpec{OTLPEndpoint: "user:hunter2@collector:4318"}
		}, "g", "s", "spec.telemetry.otlpEndpoint must be an http or https URL"},
		{"telemetry ratio out of range", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Telemetry = &garrav1alpha1.TelemetrySpec{OTLPEndpoint: "http://c:4318", Sampler: "traceidratio", SamplerRatio: "7"}
		}, "g", "s", "spec.telemetry.sampler/samplerRatio"},
		{"telemetry valid", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Telemetry = &garrav1alpha1.TelemetrySpec{OTLPEndpoint: "https://otel.example:4318", Sampler: "parentbased_traceidratio", SamplerRatio: "0.5"}
		}, "g", "s", ""},
		{"negative gateway storage", func(gs *garrav1alpha1.GarraServer) { gs.Spec.Gateway.Storage.Size = resource.MustParse("-1Gi") }, "g", "s",
			"spec.gateway.storage.size must be positive"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gs := testServer()
			if tc.mutate != nil {
				tc.mutate(gs)
			}
			got := invalidSpec(gs, tc.defGarra, tc.defSbx)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("invalidSpec = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestComputeStatusConfigAndRotation: the applied config and the token
// overlaps come from what the pass observed; a pass that rendered nothing
// keeps the last hash and ConfigApplied as they were.
func TestComputeStatusConfigAndRotation(t *testing.T) {
	gs := testServer()
	until := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	st := computeStatus(gs, observed{
		configHash: "sha256:aa",
		applied:    &metav1.Condition{Status: metav1.ConditionFalse, Reason: "Pending", Message: "not yet"},
		rotations:  map[string]time.Time{"n8n-prod": until},
	})
	if st.ConfigHash != "sha256:aa" {
		t.Errorf("configHash = %q", st.ConfigHash)
	}
	c := meta.FindStatusCondition(st.Conditions, garrav1alpha1.ConditionConfigApplied)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != "Pending" || c.ObservedGeneration != gs.Generation {
		t.Errorf("ConfigApplied = %+v", c)
	}
	if r := st.Orchestrators[0].TokenRotation; r != nil {
		t.Errorf("badgood rotation = %+v, want none", r)
	}
	if r := st.Orchestrators[1].TokenRotation; r == nil || !r.PreviousValidUntil.Equal(&metav1.Time{Time: until.Truncate(time.Second)}) {
		t.Errorf("n8n-prod rotation = %+v, want until %s (seconds, as the annotation keeps it)", r, until)
	}

	gs.Status = st
	again := computeStatus(gs, observed{invalid: "spec.image is empty"})
	if again.ConfigHash != "sha256:aa" {
		t.Errorf("configHash after a pass that rendered nothing = %q, want the last one", again.ConfigHash)
	}
	if c := meta.FindStatusCondition(again.Conditions, garrav1alpha1.ConditionConfigApplied); c == nil || c.Reason != "Pending" {
		t.Errorf("ConfigApplied after a pass that rendered nothing = %+v, want it kept", c)
	}
}

// TestTokenReviewAccessCondition: a namespace-scoped operator's message
// becomes TokenReviewAccess Unknown, ClusterBindingExternal; without one
// the condition is removed.
func TestTokenReviewAccessCondition(t *testing.T) {
	gs := testServer()
	gs.Spec.Orchestrators[1].Auth = &garrav1alpha1.OrchestratorAuth{ServiceAccount: &garrav1alpha1.ServiceAccountAuth{Name: "robot"}}
	msg := externalBindingMessage(gs, inlineMembers(gs), []string{"agents", "ops"})
	for _, want := range []string{"spec.orchestrators[1].auth.serviceAccount (" + gs.Spec.Orchestrators[1].Name + ")",
		"namespaces agents,ops", "ServiceAccount agents/team-a-gateway", TokenReviewClusterRole} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "orchestrators[0]") {
		t.Errorf("message names the token orchestrator: %q", msg)
	}
	gs.Status = computeStatus(gs, observed{tokenReview: msg})
	c := meta.FindStatusCondition(gs.Status.Conditions, garrav1alpha1.ConditionTokenReviewAccess)
	if c == nil || c.Status != metav1.ConditionUnknown || c.Reason != garrav1alpha1.ReasonClusterBindingExternal || c.Message != msg {
		t.Fatalf("condition = %+v", c)
	}
	gs.Status = computeStatus(gs, observed{})
	if c := meta.FindStatusCondition(gs.Status.Conditions, garrav1alpha1.ConditionTokenReviewAccess); c != nil {
		t.Errorf("condition kept without a message: %+v", c)
	}
}
