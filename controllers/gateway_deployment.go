package controllers

import (
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// GatewayCommand is what the gateway container runs.
func GatewayCommand() []string {
	return []string{"garra", "gateway", "--config", ConfigDir + "/" + ConfigKey}
}

// gatewayDeployment is NAME-gateway: one replica of `garra gateway`,
// Recreate (its data volume is ReadWriteOnce), hardened like the sandboxes.
// Its credentials are read-only files: the owner key under ownerDir, every
// orchestrator's tokens under TokensDir from the whole Secret
// NAME-gateway-tokens. Both are plain volumes, never subPath mounts (which
// the kubelet does not update), and the volume list does not depend on the
// orchestrators: adding one changes that Secret and config.yml, which the
// gateway watches through the API server (gatewayWatchArgs) and reloads,
// not this template. The LLM, Brave and Telegram keys are
// environment variables from Secret keys. hash is the inputs hash of the
// Secret keys this template refers to. egress (some orchestrator has
// sandbox.egress: gateway) adds the egress proxy's port and its CA's
// volume: the one thing of the orchestrators the template depends on.
func gatewayDeployment(gs *garrav1alpha1.GarraServer, egress bool, image, hash string) *appsv1ac.DeploymentApplyConfiguration {
	lbl := labels(gs, ComponentGateway, "")
	owner := gatewayAPIKeyRef(gs)

	env := []*corev1ac.EnvVarApplyConfiguration{corev1ac.EnvVar().WithName(EnvHome).WithValue(TmpDir)}
	for _, er := range gatewayEnvRefs(gs) {
		env = append(env, secretEnv(er.Env, er.Ref.Secret, er.Ref.Key))
	}
	env = append(env, telemetryEnv(gs, ServiceGateway)...)
	_, trust := trustedCARef(gs)
	if trust {
		env = append(env, corev1ac.EnvVar().WithName(EnvSSLCertDir).WithValue(strings.Join(append(slices.Clone(systemCertDirs), egressTrustDir), ":")))
	}

	container := corev1ac.Container().
		WithName(ComponentGateway).
		WithImage(image).
		WithCommand(GatewayCommand()...).
		WithArgs(gatewayWatchArgs(gs)...).
		WithPorts(corev1ac.ContainerPort().WithName(PortName).WithContainerPort(GatewayPort).WithProtocol(corev1.ProtocolTCP)).
		WithEnv(env...).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName("config").WithMountPath(ConfigDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName("data").WithMountPath(DataDir),
			corev1ac.VolumeMount().WithName("tmp").WithMountPath(TmpDir),
			corev1ac.VolumeMount().WithName("owner-key").WithMountPath(ownerDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName("tokens").WithMountPath(TokensDir).WithReadOnly(true),
		).
		WithReadinessProbe(readinessProbe("/readyz", gatewayName(gs), ReadinessPeriodSeconds)).
		WithLivenessProbe(livenessProbe("/healthz", gatewayName(gs))).
		WithSecurityContext(restrictedContainerSecurity())
	if res := resources(gs.Spec.Gateway.Resources); res != nil {
		container.WithResources(res)
	}
	if egress {
		container.
			WithPorts(corev1ac.ContainerPort().WithName(EgressPortName).WithContainerPort(EgressPort).WithProtocol(corev1.ProtocolTCP)).
			WithVolumeMounts(corev1ac.VolumeMount().WithName("egress-ca").WithMountPath(egressCADir).WithReadOnly(true))
	}
	if trust {
		container.WithVolumeMounts(corev1ac.VolumeMount().WithName("egress-trust").WithMountPath(egressTrustDir).WithReadOnly(true))
	}

	// The API credential is always mounted: the gateway watches its
	// policy objects with it (GatewayPolicyRole), and uses it for
	// TokenReviews, waking idle sandboxes and, on a shared store, the
	// poller Lease.
	pod := corev1ac.PodSpec().
		WithServiceAccountName(gatewayName(gs)).
		WithAutomountServiceAccountToken(true).
		WithEnableServiceLinks(false).
		WithSecurityContext(restrictedPodSecurity()).
		WithContainers(container).
		WithVolumes(
			corev1ac.Volume().WithName("config").WithConfigMap(
				corev1ac.ConfigMapVolumeSource().WithName(gatewayName(gs)).
					WithItems(corev1ac.KeyToPath().WithKey(ConfigKey).WithPath(ConfigKey))),
			corev1ac.Volume().WithName("data").WithPersistentVolumeClaim(
				corev1ac.PersistentVolumeClaimVolumeSource().WithClaimName(gatewayDataName(gs))),
			corev1ac.Volume().WithName("tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
			corev1ac.Volume().WithName("owner-key").WithSecret(
				corev1ac.SecretVolumeSource().WithSecretName(owner.Secret).WithDefaultMode(SecretFileMode).
					WithItems(corev1ac.KeyToPath().WithKey(owner.Key).WithPath(KeyAPIKey))),
			corev1ac.Volume().WithName("tokens").WithSecret(
				corev1ac.SecretVolumeSource().WithSecretName(tokensName(gs)).WithDefaultMode(SecretFileMode)),
		).
		WithTerminationGracePeriodSeconds(gatewayTerminationGrace(gs))
	// The egress volumes exist only while they are used, so a server
	// without egress through the gateway keeps the pod it had.
	if egress {
		ca := egressCARef(gs)
		pod.WithVolumes(corev1ac.Volume().WithName("egress-ca").WithSecret(
			corev1ac.SecretVolumeSource().WithSecretName(ca.Secret).WithDefaultMode(SecretFileMode).
				WithItems(
					corev1ac.KeyToPath().WithKey(corev1.TLSCertKey).WithPath(corev1.TLSCertKey),
					corev1ac.KeyToPath().WithKey(corev1.TLSPrivateKeyKey).WithPath(corev1.TLSPrivateKeyKey))))
	}
	if ref, ok := trustedCARef(gs); ok {
		pod.WithVolumes(corev1ac.Volume().WithName("egress-trust").WithSecret(
			corev1ac.SecretVolumeSource().WithSecretName(ref.Secret).WithDefaultMode(SecretFileMode).
				WithItems(corev1ac.KeyToPath().WithKey(ref.Key).WithPath(KeyTrustedCA))))
	}

	dep := singlePodDeployment(serverPlacement(gs), gatewayName(gs), lbl, hash, pod)
	if sharedStore(gs) {
		sharedGatewayDeployment(gs, dep)
	}
	return dep
}

// DrainMarginSeconds is what terminationGracePeriodSeconds adds to
// spec.gateway.drainSeconds: time to exit after the drain deadline, before
// the kubelet's SIGKILL.
const DrainMarginSeconds = 10

// defaultDrainSeconds is the CRD's default, for a spec the API server did
// not default.
const defaultDrainSeconds = 30

// drainSeconds is how long the gateway and every sandbox let the calls in
// flight finish on SIGTERM (rendered as gateway.drain_seconds and
// `garra sandbox --drain-seconds`).
func drainSeconds(gs *garrav1alpha1.GarraServer) int {
	if d := int(gs.Spec.Gateway.DrainSeconds); d > 0 {
		return d
	}
	return defaultDrainSeconds
}

// terminationGrace is the pods' terminationGracePeriodSeconds: the drain
// plus the margin, so the kubelet's SIGKILL never cuts a drain short.
func terminationGrace(gs *garrav1alpha1.GarraServer) int64 {
	return int64(drainSeconds(gs) + DrainMarginSeconds)
}

// HandoverSeconds is the gateway's handover_seconds on a shared store:
// how long a replica that is stopping still serves new requests (each on
// its own connection) while every node's proxy learns that its pod left
// the Service, so that no call lands on a replica already refusing.
const HandoverSeconds = 5

// gatewayTerminationGrace is terminationGrace plus the handover, when the
// gateway has one.
func gatewayTerminationGrace(gs *garrav1alpha1.GarraServer) int64 {
	if sharedStore(gs) {
		return terminationGrace(gs) + HandoverSeconds
	}
	return terminationGrace(gs)
}

// singlePodDeployment is the Deployment shape of every pod Garra runs: one
// replica, Recreate (a ReadWriteOnce volume cannot be shared by two pods),
// in at's namespace and owned by its owner, with the inputs hash (when there is one) on the template so
// that a change of what the pod reads only at start rolls it out.
func singlePodDeployment(at placement, name string, lbl map[string]string, hash string, pod *corev1ac.PodSpecApplyConfiguration) *appsv1ac.DeploymentApplyConfiguration {
	tmpl := corev1ac.PodTemplateSpec().WithLabels(lbl).WithSpec(pod)
	if hash != "" {
		tmpl.WithAnnotations(map[string]string{AnnotationInputsHash: hash})
	}
	return appsv1ac.Deployment(name, at.Namespace).
		WithLabels(lbl).
		WithOwnerReferences(at.ownerRefs()...).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(1).
			WithStrategy(appsv1ac.DeploymentStrategy().WithType(appsv1.RecreateDeploymentStrategyType)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(lbl)).
			WithTemplate(tmpl))
}
