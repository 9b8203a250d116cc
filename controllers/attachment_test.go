package controllers

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

func TestDecideAttachment(t *testing.T) {
	rule := func(from garrav1alpha1.FromNamespaces, sel *metav1.LabelSelector) func(*garrav1alpha1.GarraServer) {
		return func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.AllowedOrchestrators = &garrav1alpha1.AllowedOrchestrators{Namespaces: &garrav1alpha1.OrchestratorNamespaces{From: from, Selector: sel}}
		}
	}
	teams := &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "team"}}
	tests := []struct {
		name     string
		server   func(*garrav1alpha1.GarraServer) // nil: no server
		ns, orch string
		nsLabels map[string]string
		watched  []string // a namespace-scoped operator's
		change   func(*garrav1alpha1.Orchestrator)
		reason   string
		message  string // a part of it
	}{
		{name: "no server", ns: "team-b", orch: "ci",
			reason: garrav1alpha1.ReasonServerNotFound, message: "no GarraServer team-a in namespace agents"},
		{name: "no rule is Same: own namespace", server: func(*garrav1alpha1.GarraServer) {}, ns: "agents", orch: "ci",
			reason: garrav1alpha1.ReasonAccepted, message: "as agents/ci"},
		{name: "no rule is Same: another namespace", server: func(*garrav1alpha1.GarraServer) {}, ns: "team-b", orch: "ci",
			reason: garrav1alpha1.ReasonNotAllowedByServer, message: "spec.allowedOrchestrators.namespaces of GarraServer agents/team-a is from: Same"},
		{name: "Same, another namespace", server: rule(garrav1alpha1.NamespacesFromSame, nil), ns: "team-b", orch: "ci",
			reason: garrav1alpha1.ReasonNotAllowedByServer, message: "not team-b"},
		{name: "All", server: rule(garrav1alpha1.NamespacesFromAll, nil), ns: "team-b", orch: "ci",
			reason: garrav1alpha1.ReasonAccepted, message: "as team-b/ci"},
		{name: "Selector matches", server: rule(garrav1alpha1.NamespacesFromSelector, teams), ns: "team-b", orch: "ci",
			nsLabels: map[string]string{"tier": "team", "x": "y"}, reason: garrav1alpha1.ReasonAccepted},
		{name: "Selector does not match", server: rule(garrav1alpha1.NamespacesFromSelector, teams), ns: "team-b", orch: "ci",
			nsLabels: map[string]string{"tier": "infra"}, reason: garrav1alpha1.ReasonNotAllowedByServer, message: "match tier=team; namespace team-b's do not"},
		{name: "Selector does not match even the server's own namespace", server: rule(garrav1alpha1.NamespacesFromSelector, teams), ns: "agents", orch: "ci",
			reason: garrav1alpha1.ReasonNotAllowedByServer},
		{name: "Selector without selector admits none", server: rule(garrav1alpha1.NamespacesFromSelector, nil), ns: "team-b", orch: "ci",
			reason: garrav1alpha1.ReasonNotAllowedByServer, message: "without a selector"},
		{name: "invalid selector", server: rule(garrav1alpha1.NamespacesFromSelector, &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near"}}}),
			ns: "team-b", orch: "ci", reason: garrav1alpha1.ReasonNotAllowedByServer, message: "spec.allowedOrchestrators.namespaces.selector"},
		{name: "a namespace-scoped operator cannot read labels: Selector refuses, naming the field", server: rule(garrav1alpha1.NamespacesFromSelector, teams),
			ns: "team-b", orch: "ci", nsLabels: map[string]string{"tier": "team"}, watched: []string{"agents", "team-b"},
			reason: garrav1alpha1.ReasonNotAllowedByServer, message: "spec.allowedOrchestrators.namespaces of GarraServer agents/team-a is from: Selector, but the operator watches only the namespaces agents,team-b"},
		{name: "a namespace-scoped operator does not see a server elsewhere", ns: "team-b", orch: "ci", watched: []string{"team-b"},
			reason: garrav1alpha1.ReasonServerNotFound, message: "spec.serverRef: namespace agents is not one the operator watches (team-b)"},
		{name: "a namespace-scoped operator applies Same", server: func(*garrav1alpha1.GarraServer) {}, ns: "agents", orch: "ci", watched: []string{"agents"},
			reason: garrav1alpha1.ReasonAccepted},
		{name: "an inline entry's name in the server's namespace", server: rule(garrav1alpha1.NamespacesFromAll, nil), ns: "agents", orch: "badgood",
			reason: garrav1alpha1.ReasonNameClash, message: "spec.orchestrators[badgood]) and this is Orchestrator agents/badgood"},
		{name: "an inline entry's name elsewhere is another orchestrator", server: rule(garrav1alpha1.NamespacesFromAll, nil), ns: "team-b", orch: "badgood",
			reason: garrav1alpha1.ReasonAccepted, message: "as team-b/badgood"},
		{name: "unusable settings are the Orchestrator's own problem", server: rule(garrav1alpha1.NamespacesFromAll, nil), ns: "team-b", orch: "ci",
			change: func(ob *garrav1alpha1.Orchestrator) { ob.Spec.Workspace.Size = resource.MustParse("0") },
			reason: garrav1alpha1.ReasonInvalidSpec, message: "spec.workspace.size must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gs *garrav1alpha1.GarraServer
			if tt.server != nil {
				gs = testServer()
				tt.server(gs)
			}
			ob := &garrav1alpha1.Orchestrator{
				ObjectMeta: metav1.ObjectMeta{Namespace: tt.ns, Name: tt.orch},
				Spec: garrav1alpha1.AttachedOrchestratorSpec{
					ServerRef: garrav1alpha1.ServerReference{Name: "team-a", Namespace: "agents"},
					OrchestratorSettings: garrav1alpha1.OrchestratorSettings{
						Workspace: garrav1alpha1.WorkspaceSpec{StorageSpec: garrav1alpha1.StorageSpec{Size: resource.MustParse("1Gi")}},
					},
				},
			}
			if tt.change != nil {
				tt.change(ob)
			}
			got := decideAttachment(gs, ob, tt.nsLabels, "sbx:1", tt.watched)
			if got.reason != tt.reason || got.accepted != (tt.reason == garrav1alpha1.ReasonAccepted) || !strings.Contains(got.message, tt.message) {
				t.Errorf("got %+v, want reason %s and a message with %q", got, tt.reason, tt.message)
			}
		})
	}
}

func TestServerKeyDefaultsToOwnNamespace(t *testing.T) {
	ob := &garrav1alpha1.Orchestrator{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "ci"},
		Spec: garrav1alpha1.AttachedOrchestratorSpec{ServerRef: garrav1alpha1.ServerReference{Name: "gw"}}}
	if got := serverKey(ob).String(); got != "team-b/gw" {
		t.Errorf("serverKey = %s", got)
	}
	ob.Spec.ServerRef.Namespace = "platform"
	if got := serverRefOf(ob); len(got) != 1 || got[0] != "platform/gw" {
		t.Errorf("serverRefOf = %v", got)
	}
}

func TestAttachedMemberNames(t *testing.T) {
	gs := testServer()
	ob := &garrav1alpha1.Orchestrator{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "ci", UID: "u1"}}
	m := attachedMember(gs, ob)
	for _, tc := range []struct{ got, want string }{
		{m.ID, "team-b/ci"},
		{m.sandboxName(), "ci-sandbox"},
		{m.workspaceName(), "ci-ws"},
		{m.orchSecretName(), "ci-token"},
		{m.sandboxTokenName(), "ci-sandbox"},
		{m.tokenKey(), "team-b_ci"},
		{m.sandboxURL(), "http://ci-sandbox.team-b.svc:8080/mcp"},
		{m.at.Namespace, "team-b"},
		{string(m.at.Owner.UID), "u1"},
		{m.labels()[LabelNamespace], "agents"},
		{orchTokenRef(m).valueKey(), "team-b/ci-token/token"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
	in := inlineMembers(gs)[0]
	if in.tokenKey() != "badgood" || in.sandboxTokenName() != "team-a-sandbox-badgood" || orchTokenRef(in).valueKey() != "team-a-orch-badgood/token" {
		t.Errorf("inline names changed: %s %s %s", in.tokenKey(), in.sandboxTokenName(), orchTokenRef(in).valueKey())
	}
}
