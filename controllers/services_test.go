package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestServices(t *testing.T) {
	gs := testServer()
	tests := []struct {
		name       string
		svc        *corev1.Service
		wantName   string
		wantLabels map[string]string
		wantPort   int32
	}{
		{"gateway", typed[corev1.Service](t, gatewayService(gs, inlineMembers(gs))), "team-a-gateway", gatewayLabels(), 3888},
		{"sandbox", typed[corev1.Service](t, sandboxService(inlineMember(gs, gs.Spec.Orchestrators[0]))), "team-a-sandbox-badgood", sandboxLabels("badgood"), 8080},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.svc
			if s.Name != tc.wantName || s.Namespace != "agents" {
				t.Errorf("name = %s/%s", s.Namespace, s.Name)
			}
			checkOwned(t, s.ObjectMeta, tc.wantLabels, true)
			eqMap(t, "selector", s.Spec.Selector, tc.wantLabels)
			if s.Spec.Type != corev1.ServiceTypeClusterIP || len(s.Spec.Ports) != 1 {
				t.Fatalf("spec = %+v", s.Spec)
			}
			p := s.Spec.Ports[0]
			if p.Name != "mcp" || p.Port != tc.wantPort || p.Protocol != corev1.ProtocolTCP || p.TargetPort.StrVal != "mcp" {
				t.Errorf("port = %+v", p)
			}
		})
	}
}

func TestSandboxServiceAccount(t *testing.T) {
	sa := typed[corev1.ServiceAccount](t, sandboxServiceAccount(inlineMembers(testServer())[0]))
	if sa.Name != "team-a-sandbox-badgood" || sa.Namespace != "agents" {
		t.Errorf("name = %s/%s", sa.Namespace, sa.Name)
	}
	checkOwned(t, sa.ObjectMeta, sandboxLabels("badgood"), true)
	if sa.AutomountServiceAccountToken == nil || *sa.AutomountServiceAccountToken {
		t.Error("token automount not disabled")
	}
	if len(sa.Secrets) != 0 || len(sa.ImagePullSecrets) != 0 {
		t.Errorf("secrets = %v %v", sa.Secrets, sa.ImagePullSecrets)
	}
}
