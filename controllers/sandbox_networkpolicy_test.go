package controllers

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
)

func TestSandboxNetworkPolicy(t *testing.T) {
	gs := testServer()
	tests := []struct {
		orch       string
		wantEgress int
	}{
		{"badgood", 0},  // egress none: deny all, DNS included
		{"n8n-prod", 2}, // egress internet: public IPv4 + kube-dns
	}
	for _, tc := range tests {
		t.Run(tc.orch, func(t *testing.T) {
			np := typed[networkingv1.NetworkPolicy](t, sandboxNetworkPolicy(inlineMember(gs, findOrch(t, gs, tc.orch))))
			if np.Name != "team-a-sandbox-"+tc.orch || np.Namespace != "agents" {
				t.Errorf("name = %s/%s", np.Namespace, np.Name)
			}
			checkOwned(t, np.ObjectMeta, sandboxLabels(tc.orch), true)
			eqMap(t, "pod selector", np.Spec.PodSelector.MatchLabels, sandboxLabels(tc.orch))
			if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
				t.Errorf("policy types = %v", np.Spec.PolicyTypes)
			}
			if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].From) != 1 || len(np.Spec.Ingress[0].Ports) != 1 {
				t.Fatalf("ingress = %+v", np.Spec.Ingress)
			}
			from := np.Spec.Ingress[0].From[0]
			if from.NamespaceSelector != nil || from.IPBlock != nil || from.PodSelector == nil {
				t.Errorf("ingress peer = %+v (must be pods of this namespace only)", from)
			} else {
				eqMap(t, "ingress pods", from.PodSelector.MatchLabels, gatewayLabels())
			}
			if p := np.Spec.Ingress[0].Ports[0]; *p.Protocol != corev1.ProtocolTCP || p.Port.IntVal != 8080 {
				t.Errorf("ingress port = %+v", p)
			}
			if len(np.Spec.Egress) != tc.wantEgress {
				t.Fatalf("egress = %+v", np.Spec.Egress)
			}
			if tc.wantEgress == 0 {
				return
			}
			ip := np.Spec.Egress[0].To[0].IPBlock
			if ip == nil || ip.CIDR != "0.0.0.0/0" ||
				!slices.Equal(ip.Except, []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10"}) {
				t.Errorf("internet rule = %+v", ip)
			}
			if len(np.Spec.Egress[0].Ports) != 0 {
				t.Errorf("internet rule ports = %v", np.Spec.Egress[0].Ports)
			}
			dns := np.Spec.Egress[1]
			if len(dns.To) != 1 || dns.To[0].NamespaceSelector == nil || dns.To[0].PodSelector == nil {
				t.Fatalf("dns rule = %+v", dns)
			}
			eqMap(t, "dns namespace", dns.To[0].NamespaceSelector.MatchLabels, map[string]string{"kubernetes.io/metadata.name": "kube-system"})
			eqMap(t, "dns pods", dns.To[0].PodSelector.MatchLabels, map[string]string{"k8s-app": "kube-dns"})
			if len(dns.Ports) != 2 || *dns.Ports[0].Protocol != corev1.ProtocolUDP || dns.Ports[0].Port.IntVal != 53 ||
				*dns.Ports[1].Protocol != corev1.ProtocolTCP || dns.Ports[1].Port.IntVal != 53 {
				t.Errorf("dns ports = %+v", dns.Ports)
			}
		})
	}
}

// With egress: gateway the sandbox reaches the gateway's pods on the
// proxy's port, in the server's namespace (also from another namespace),
// and kube-dns; nothing else, the internet included.
func TestSandboxNetworkPolicyEgressGateway(t *testing.T) {
	gs, ms := egressServer()
	for _, m := range []member{ms[0], ms[2]} {
		t.Run(m.ID, func(t *testing.T) {
			np := typed[networkingv1.NetworkPolicy](t, sandboxNetworkPolicy(m))
			if np.Namespace != m.at.Namespace {
				t.Errorf("namespace = %s", np.Namespace)
			}
			if len(np.Spec.Egress) != 2 {
				t.Fatalf("egress = %+v", np.Spec.Egress)
			}
			gw := np.Spec.Egress[0]
			if len(gw.To) != 1 || gw.To[0].IPBlock != nil || gw.To[0].NamespaceSelector == nil || gw.To[0].PodSelector == nil {
				t.Fatalf("gateway rule = %+v", gw)
			}
			eqMap(t, "gateway namespace", gw.To[0].NamespaceSelector.MatchLabels, map[string]string{"kubernetes.io/metadata.name": gs.Namespace})
			eqMap(t, "gateway pods", gw.To[0].PodSelector.MatchLabels, gatewayLabels())
			if len(gw.Ports) != 1 || *gw.Ports[0].Protocol != corev1.ProtocolTCP || gw.Ports[0].Port.IntVal != 3128 {
				t.Errorf("gateway ports = %+v", gw.Ports)
			}
			dns := np.Spec.Egress[1]
			if len(dns.To) != 1 || dns.To[0].NamespaceSelector == nil || dns.To[0].IPBlock != nil {
				t.Fatalf("dns rule = %+v", dns)
			}
			eqMap(t, "dns namespace", dns.To[0].NamespaceSelector.MatchLabels, map[string]string{"kubernetes.io/metadata.name": "kube-system"})
			eqMap(t, "dns pods", dns.To[0].PodSelector.MatchLabels, map[string]string{"k8s-app": "kube-dns"})
			for _, r := range np.Spec.Egress {
				for _, p := range r.To {
					if p.IPBlock != nil {
						t.Errorf("an address block: %+v", p.IPBlock)
					}
				}
				if len(r.Ports) == 0 {
					t.Errorf("a rule without ports: %+v", r)
				}
			}
		})
	}
}
