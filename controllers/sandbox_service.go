package controllers

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// sandboxService is m's sandbox Service (NAME-sandbox-O inline): port 8080
// named mcp to its sandbox pod.
func sandboxService(m member) *corev1ac.ServiceApplyConfiguration {
	return mcpService(m.sandboxName(), m.at, m.labels(), SandboxPort)
}
