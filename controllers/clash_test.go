package controllers

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

func TestClashOf(t *testing.T) {
	gs := testServer() // team-a in agents, inline badgood and n8n
	other := testServer()
	other.Name, other.UID = "other", "u-other"
	other.Spec.Orchestrators = []garrav1alpha1.OrchestratorSpec{{Name: "sandbox"}}
	attached := func(ns, name string, change ...func(*garrav1alpha1.Orchestrator)) member {
		ob := &garrav1alpha1.Orchestrator{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("u-" + ns + "-" + name)}}
		for _, c := range change {
			c(ob)
		}
		return attachedMember(gs, ob)
	}
	claim := func(name string) func(*garrav1alpha1.Orchestrator) {
		return func(ob *garrav1alpha1.Orchestrator) { ob.Spec.Workspace.ClaimName = name }
	}
	inlineSandbox := testServer()
	inlineSandbox.Spec.Orchestrators = append(inlineSandbox.Spec.Orchestrators, garrav1alpha1.OrchestratorSpec{Name: "sandbox"})
	inlineToken := testServer()
	inlineToken.Spec.Orchestrators = append(inlineToken.Spec.Orchestrators, garrav1alpha1.OrchestratorSpec{Name: "token"})
	tests := []struct {
		name       string
		m          member
		earlier    []member
		neighbours []*garrav1alpha1.GarraServer
		want       []string // parts of the message; none: no clash
	}{
		{name: "a team's own namespace: nothing to meet", m: attached("team-b", "ci"), earlier: inlineMembers(gs)},
		{name: "the server's namespace, other names", m: attached("agents", "ci"), earlier: inlineMembers(gs)},
		{name: "its Deployment is an inline entry's",
			m:       attachedMember(inlineSandbox, &garrav1alpha1.Orchestrator{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "team-a-sandbox"}}),
			earlier: inlineMembers(inlineSandbox),
			want:    []string{"Orchestrator agents/team-a-sandbox would write Deployment agents/team-a-sandbox-sandbox", "GarraServer agents/team-a's inline orchestrator sandbox (spec.orchestrators[sandbox])"}},
		{name: "its token Secret is an inline entry's generated Secret",
			m:       attachedMember(inlineToken, &garrav1alpha1.Orchestrator{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "team-a-orch"}}),
			earlier: inlineMembers(inlineToken),
			want:    []string{"Secret agents/team-a-orch-token", "inline orchestrator token"}},
		{name: "its sandbox token Secret is an inline entry's generated Secret",
			m:       attachedMember(inlineSandbox, &garrav1alpha1.Orchestrator{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "team-a-orch"}}),
			earlier: inlineMembers(inlineSandbox),
			want:    []string{"Secret agents/team-a-orch-sandbox", "inline orchestrator sandbox"}},
		{name: "another server of its namespace: its inline entry's objects",
			m: attached("agents", "other-sandbox"), earlier: inlineMembers(gs), neighbours: []*garrav1alpha1.GarraServer{other},
			want: []string{"Deployment agents/other-sandbox-sandbox", "GarraServer agents/other's inline orchestrator sandbox"}},
		{name: "the same name in another namespace than that server's is fine",
			m: attached("team-b", "other-sandbox"), earlier: inlineMembers(gs)},
		{name: "adopting the claim of a live inline entry",
			m: attached("agents", "ci", claim("team-a-ws-badgood")), earlier: inlineMembers(gs),
			want: []string{"PersistentVolumeClaim agents/team-a-ws-badgood", "inline orchestrator badgood"}},
		{name: "adopting the claim of an earlier Orchestrator",
			m: attached("team-b", "two", claim("one-ws")), earlier: []member{attached("team-b", "one")},
			want: []string{"Orchestrator team-b/two would write PersistentVolumeClaim team-b/one-ws, which Orchestrator team-b/one writes"}},
		{name: "adopting a claim nobody writes", m: attached("agents", "ci", claim("team-a-ws-gone")), earlier: inlineMembers(gs)},
		{name: "the same identity twice", m: attached("team-b", "ci"), earlier: []member{attached("team-b", "ci")},
			want: []string{"both known to the gateway as team-b/ci"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := clashOf(tt.m, tt.earlier, tt.neighbours)
			if len(tt.want) == 0 {
				if got != "" {
					t.Fatalf("clash %q, want none", got)
				}
				return
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("clash %q\nwants %q", got, w)
				}
			}
		})
	}
}

// TestTokenKeysNeverMeet: an attached key has the '_' no inline name
// (a DNS label) has, and a namespace has none, so the keys of the tokens
// Secret cannot meet whatever the names.
func TestTokenKeysNeverMeet(t *testing.T) {
	gs := testServer()
	gs.Spec.Orchestrators = append(gs.Spec.Orchestrators, garrav1alpha1.OrchestratorSpec{Name: "team-b-ci"})
	in := inlineMembers(gs)
	for _, ob := range []*garrav1alpha1.Orchestrator{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "ci"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "badgood"}},
	} {
		m := attachedMember(gs, ob)
		for _, e := range in {
			if sharesKey(m, e) {
				t.Errorf("%s and %s share a key: %v %v", m.ID, e.ID, m.tokenKeys(), e.tokenKeys())
			}
		}
	}
}

func TestTokenClash(t *testing.T) {
	gs := testServer()
	team := func(name, secret string) member {
		ob := &garrav1alpha1.Orchestrator{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: name}}
		if secret != "" {
			ob.Spec.TokenSecretRef = &garrav1alpha1.SecretKeySelector{Name: secret, Key: "token"}
		}
		return attachedMember(gs, ob)
	}
	values := map[string][]byte{
		"team-a-gateway/api-key":        []byte("owner-key"),
		"team-a-orch-badgood/token":     []byte("inline-token\n"),
		"team-b/copied/token":           []byte("inline-token"),
		"team-b/mine/token":             []byte("mine"),
		"team-b/stolen-owner/token":     []byte("owner-key"),
		"team-b/first-token/token":      []byte("s3cr3t-x"),
		"team-b/second-shared/token":    []byte(" s3cr3t-x \nold"),
		"team-b/ci-token/token":         []byte("generated"),
		"team-b/ci-token/sandbox-token": []byte("sbx"),
	}
	first := team("first", "")
	tests := []struct {
		name    string
		m       member
		earlier []member
		want    string
	}{
		{"its own token", team("ci", ""), inlineMembers(gs), ""},
		{"a Secret of its own", team("x", "mine"), inlineMembers(gs), ""},
		{"a copy of an inline entry's token, that entry still there", team("x", "copied"), inlineMembers(gs),
			"spec.tokenSecretRef: copied holds the same token as GarraServer agents/team-a's inline orchestrator badgood (spec.orchestrators[badgood])"},
		{"the same copy once the entry is gone", team("x", "copied"), inlineMembers(gs)[1:], ""},
		{"the owner key", team("x", "stolen-owner"), inlineMembers(gs), "holds the owner key of GarraServer agents/team-a"},
		{"an earlier Orchestrator's token", team("second", "second-shared"), []member{first}, "same token as Orchestrator team-b/first"},
		{"a token not read yet meets nothing", team("x", "absent"), inlineMembers(gs), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tokenClash(tt.m, tt.earlier, values)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("tokenClash = %q, want %q", got, tt.want)
			}
			for _, v := range values {
				if len(v) > 3 && strings.Contains(got, strings.TrimSpace(string(v))) {
					t.Errorf("the message holds a token: %q", got)
				}
			}
		})
	}
}
