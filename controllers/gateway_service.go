package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// gatewayService is NAME-gateway: port 3888 named mcp to the gateway pods,
// and 3128 named egress, the proxy, while some member of ms goes out
// through the gateway.
func gatewayService(gs *garrav1alpha1.GarraServer, ms []member) *corev1ac.ServiceApplyConfiguration {
	svc := mcpService(gatewayName(gs), serverPlacement(gs), labels(gs, ComponentGateway, ""), GatewayPort)
	if anyEgressGateway(ms) {
		svc.Spec.WithPorts(corev1ac.ServicePort().
			WithName(EgressPortName).
			WithProtocol(corev1.ProtocolTCP).
			WithPort(EgressPort).
			WithTargetPort(intstr.FromString(EgressPortName)))
	}
	return svc
}

// mcpService is a ClusterIP Service with one TCP port named mcp.
func mcpService(name string, at placement, lbl map[string]string, port int32) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(name, at.Namespace).
		WithLabels(lbl).
		WithOwnerReferences(at.ownerRefs()...).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(lbl).
			WithPorts(corev1ac.ServicePort().
				WithName(PortName).
				WithProtocol(corev1.ProtocolTCP).
				WithPort(port).
				WithTargetPort(intstr.FromString(PortName))))
}
