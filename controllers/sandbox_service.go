package controllers

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// sandboxService is NAME-sandbox-O: port 8080 named mcp to o's sandbox pod.
func sandboxService(gs *garrav1alpha1.GarraServer, o string) *corev1ac.ServiceApplyConfiguration {
	return mcpService(sandboxName(gs, o), gs, labels(gs, ComponentSandbox, o), SandboxPort)
}
