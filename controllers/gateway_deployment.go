package controllers

import (
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
// Its own credentials (owner key, orchestrator and sandbox tokens) are
// read-only files under SecretsDir from one projected volume; the LLM and
// Telegram keys are environment variables from Secret keys. hash is the
// inputs hash of the config and those secrets.
func gatewayDeployment(gs *garrav1alpha1.GarraServer, image, hash string) *appsv1ac.DeploymentApplyConfiguration {
	lbl := labels(gs, ComponentGateway, "")

	secrets := corev1ac.ProjectedVolumeSource().WithDefaultMode(SecretFileMode)
	for _, fr := range gatewayFileRefs(gs) {
		secrets.WithSources(corev1ac.VolumeProjection().WithSecret(
			corev1ac.SecretProjection().WithName(fr.Ref.Secret).
				WithItems(corev1ac.KeyToPath().WithKey(fr.Ref.Key).WithPath(fr.Path))))
	}

	env := []*corev1ac.EnvVarApplyConfiguration{corev1ac.EnvVar().WithName(EnvHome).WithValue(TmpDir)}
	for _, er := range gatewayEnvRefs(gs) {
		env = append(env, secretEnv(er.Env, er.Ref.Secret, er.Ref.Key))
	}

	container := corev1ac.Container().
		WithName(ComponentGateway).
		WithImage(image).
		WithCommand(GatewayCommand()...).
		WithPorts(corev1ac.ContainerPort().WithName(PortName).WithContainerPort(GatewayPort).WithProtocol(corev1.ProtocolTCP)).
		WithEnv(env...).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName("config").WithMountPath(ConfigDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName("data").WithMountPath(DataDir),
			corev1ac.VolumeMount().WithName("tmp").WithMountPath(TmpDir),
			corev1ac.VolumeMount().WithName("secrets").WithMountPath(SecretsDir).WithReadOnly(true),
		).
		WithReadinessProbe(readinessProbe("/readyz", gatewayName(gs))).
		WithLivenessProbe(livenessProbe("/healthz", gatewayName(gs))).
		WithSecurityContext(restrictedContainerSecurity())
	if res := resources(gs.Spec.Gateway.Resources); res != nil {
		container.WithResources(res)
	}

	pod := corev1ac.PodSpec().
		WithAutomountServiceAccountToken(false).
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
			corev1ac.Volume().WithName("secrets").WithProjected(secrets),
		)

	return singlePodDeployment(gs, gatewayName(gs), lbl, hash, pod)
}

// singlePodDeployment is the Deployment shape of every pod Garra runs: one
// replica, Recreate (a ReadWriteOnce volume cannot be shared by two pods),
// owned by gs, with the inputs hash on the template so changes roll out.
func singlePodDeployment(gs *garrav1alpha1.GarraServer, name string, lbl map[string]string, hash string, pod *corev1ac.PodSpecApplyConfiguration) *appsv1ac.DeploymentApplyConfiguration {
	return appsv1ac.Deployment(name, gs.Namespace).
		WithLabels(lbl).
		WithOwnerReferences(ownerRefs(gs)...).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(1).
			WithStrategy(appsv1ac.DeploymentStrategy().WithType(appsv1.RecreateDeploymentStrategyType)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(lbl)).
			WithTemplate(corev1ac.PodTemplateSpec().
				WithLabels(lbl).
				WithAnnotations(map[string]string{AnnotationInputsHash: hash}).
				WithSpec(pod)))
}
