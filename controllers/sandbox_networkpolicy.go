package controllers

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// namespaceNameLabel is the label the API server puts on every namespace,
// its name: how a NetworkPolicy peer names one namespace.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// PublicIPv4 is what egress "internet" allows, minus NonPublicIPv4.
const PublicIPv4 = "0.0.0.0/0"

// NonPublicIPv4 are the ranges egress "internet" excludes: RFC 1918
// private networks, link-local (cloud metadata at 169.254.169.254) and
// carrier-grade NAT.
var NonPublicIPv4 = []string{"10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "169.254.0.0/16", "100.64.0.0/10"}

// sandboxNetworkPolicy is m's (NAME-sandbox-O inline). Ingress: only this
// GarraServer's gateway pods, on 8080; for an attached member, in another
// namespace, the peer names the server's namespace too (a pod selector
// alone selects in the policy's own). Egress per sandbox.egress:
//
//   - none (default): nothing at all, DNS included. The sandbox only
//     answers the gateway (replies to admitted connections are not egress),
//     and with no reachable address a name lookup is of no use; denying it
//     also closes DNS as an exfiltration channel.
//   - internet: public IPv4 (NonPublicIPv4 excluded) plus DNS (UDP and TCP
//     53) to kube-dns in kube-system.
//   - gateway: only this GarraServer's gateway pods, in the server's
//     namespace (named by its kubernetes.io/metadata.name label, so the
//     rule reads the same for an attached member elsewhere), on the egress
//     proxy's port, plus DNS to kube-dns to resolve the gateway's Service.
//     Every other destination, the public internet included, is reached
//     through the proxy or not at all.
func sandboxNetworkPolicy(m member) *networkingv1ac.NetworkPolicyApplyConfiguration {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	gateway := networkingv1ac.NetworkPolicyPeer().
		WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(labels(m.gs, ComponentGateway, "")))
	if m.attached {
		gateway.WithNamespaceSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{namespaceNameLabel: m.gs.Namespace}))
	}
	spec := networkingv1ac.NetworkPolicySpec().
		WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(m.labels())).
		WithPolicyTypes(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress).
		WithIngress(networkingv1ac.NetworkPolicyIngressRule().
			WithFrom(gateway).
			WithPorts(networkingv1ac.NetworkPolicyPort().WithProtocol(tcp).WithPort(intstr.FromInt32(SandboxPort))))
	dns := networkingv1ac.NetworkPolicyEgressRule().
		WithTo(networkingv1ac.NetworkPolicyPeer().
			WithNamespaceSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{namespaceNameLabel: "kube-system"})).
			WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{"k8s-app": "kube-dns"}))).
		WithPorts(
			networkingv1ac.NetworkPolicyPort().WithProtocol(udp).WithPort(intstr.FromInt32(53)),
			networkingv1ac.NetworkPolicyPort().WithProtocol(tcp).WithPort(intstr.FromInt32(53)))
	switch m.Sandbox.Egress {
	case garrav1alpha1.EgressInternet:
		spec.WithEgress(
			networkingv1ac.NetworkPolicyEgressRule().
				WithTo(networkingv1ac.NetworkPolicyPeer().
					WithIPBlock(networkingv1ac.IPBlock().WithCIDR(PublicIPv4).WithExcept(NonPublicIPv4...))),
			dns,
		)
	case garrav1alpha1.EgressGateway:
		spec.WithEgress(
			networkingv1ac.NetworkPolicyEgressRule().
				WithTo(networkingv1ac.NetworkPolicyPeer().
					WithNamespaceSelector(metav1ac.LabelSelector().WithMatchLabels(map[string]string{namespaceNameLabel: m.gs.Namespace})).
					WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(labels(m.gs, ComponentGateway, "")))).
				WithPorts(networkingv1ac.NetworkPolicyPort().WithProtocol(tcp).WithPort(intstr.FromInt32(EgressPort))),
			dns,
		)
	}
	return networkingv1ac.NetworkPolicy(m.sandboxName(), m.at.Namespace).
		WithLabels(m.labels()).
		WithOwnerReferences(m.at.ownerRefs()...).
		WithSpec(spec)
}
