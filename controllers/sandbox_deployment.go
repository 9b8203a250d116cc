package controllers

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// SandboxCommand is what a sandbox container runs.
func SandboxCommand(gs *garrav1alpha1.GarraServer) []string {
	return []string{"garra", "sandbox", "--workspace", WorkspaceDir, "--listen", ":" + strconv.Itoa(SandboxPort),
		"--token-file", SandboxTokenPath, "--drain-seconds", strconv.Itoa(drainSeconds(gs))}
}

// sandboxDeployment is NAME-sandbox-O: one replica of `garra sandbox` under
// the restricted Pod Security Standard, with /workspace from o's claim,
// /tmp an emptyDir, no API token, and as its only secret the lines of its
// own sandbox token: the key O.sandbox of NAME-gateway-tokens, projected
// alone (the other keys of that Secret never reach this pod).
//
// The token is a file, not a variable, so that a rotation reaches the
// running server (it re-reads the file) without cutting the agent runs in
// flight. bash in this pod runs as the server's uid and can read that
// file; what it learns is the token that lets a caller run commands in
// this same sandbox, which bash already does. No other credential is here.
func sandboxDeployment(gs *garrav1alpha1.GarraServer, o garrav1alpha1.OrchestratorSpec, image string) *appsv1ac.DeploymentApplyConfiguration {
	lbl := labels(gs, ComponentSandbox, o.Name)

	container := corev1ac.Container().
		WithName(ComponentSandbox).
		WithImage(image).
		WithCommand(SandboxCommand(gs)...).
		WithPorts(corev1ac.ContainerPort().WithName(PortName).WithContainerPort(SandboxPort).WithProtocol(corev1.ProtocolTCP)).
		WithEnv(append([]*corev1ac.EnvVarApplyConfiguration{corev1ac.EnvVar().WithName(EnvHome).WithValue(TmpDir)},
			telemetryEnv(gs, ServiceSandbox)...)...).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName("workspace").WithMountPath(WorkspaceDir),
			corev1ac.VolumeMount().WithName("tmp").WithMountPath(TmpDir),
			corev1ac.VolumeMount().WithName("token").WithMountPath(SecretsDir).WithReadOnly(true),
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
			corev1ac.Volume().WithName("token").WithProjected(corev1ac.ProjectedVolumeSource().
				WithDefaultMode(SecretFileMode).
				WithSources(corev1ac.VolumeProjection().WithSecret(corev1ac.SecretProjection().
					WithName(tokensName(gs)).
					WithItems(corev1ac.KeyToPath().WithKey(o.Name+SandboxKeySuffix).WithPath(KeySandboxToken))))),
		).
		WithTerminationGracePeriodSeconds(terminationGrace(gs))

	// No inputs hash: nothing this pod reads only at start comes from a
	// Secret, so a rotation or a policy change never restarts it.
	return singlePodDeployment(gs, sandboxName(gs, o.Name), lbl, "", pod)
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
