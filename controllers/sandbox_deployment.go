package controllers

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// SandboxCommand is what a sandbox container runs.
func SandboxCommand() []string {
	return []string{"garra", "sandbox", "--workspace", WorkspaceDir, "--listen", ":" + strconv.Itoa(SandboxPort)}
}

// sandboxDeployment is NAME-sandbox-O: one replica of `garra sandbox` under
// the restricted Pod Security Standard, with /workspace from o's claim,
// /tmp an emptyDir, no API token, and only its sandbox-token as a secret.
//
// The token stays an environment variable, unlike the gateway's: here bash
// runs as the server's own uid, and any file the server can read, bash can
// read too; the environment of the non-dumpable server it cannot.
func sandboxDeployment(gs *garrav1alpha1.GarraServer, o garrav1alpha1.OrchestratorSpec, image, hash string) *appsv1ac.DeploymentApplyConfiguration {
	lbl := labels(gs, ComponentSandbox, o.Name)
	tok := sandboxTokenRef(gs, o.Name)

	container := corev1ac.Container().
		WithName(ComponentSandbox).
		WithImage(image).
		WithCommand(SandboxCommand()...).
		WithPorts(corev1ac.ContainerPort().WithName(PortName).WithContainerPort(SandboxPort).WithProtocol(corev1.ProtocolTCP)).
		WithEnv(
			corev1ac.EnvVar().WithName(EnvHome).WithValue(TmpDir),
			secretEnv(EnvSandboxToken, tok.Secret, tok.Key),
		).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName("workspace").WithMountPath(WorkspaceDir),
			corev1ac.VolumeMount().WithName("tmp").WithMountPath(TmpDir),
		).
		WithReadinessProbe(readinessProbe("/readyz", "")).
		WithLivenessProbe(livenessProbe("/healthz", "")).
		WithSecurityContext(restrictedContainerSecurity())
	if res := resources(o.Sandbox.Resources); res != nil {
		container.WithResources(res)
	}

	pod := corev1ac.PodSpec().
		WithServiceAccountName(sandboxName(gs, o.Name)).
		WithAutomountServiceAccountToken(false).
		WithEnableServiceLinks(false).
		WithSecurityContext(restrictedPodSecurity()).
		WithContainers(container).
		WithVolumes(
			corev1ac.Volume().WithName("workspace").WithPersistentVolumeClaim(
				corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(workspaceName(gs, o.Name))),
			corev1ac.Volume().WithName("tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
		)

	return singlePodDeployment(gs, sandboxName(gs, o.Name), lbl, hash, pod)
}

// sandboxImage resolves o's image: its own, then spec.sandboxImage, then
// the manager's default.
func sandboxImage(gs *garrav1alpha1.GarraServer, o garrav1alpha1.OrchestratorSpec, def string) string {
	switch {
	case o.Sandbox.Image != "":
		return o.Sandbox.Image
	case gs.Spec.SandboxImage != "":
		return gs.Spec.SandboxImage
	}
	return def
}
