package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// restrictedPodSecurity meets the "restricted" Pod Security Standard at pod
// level: a fixed non-root UID/GID, fsGroup so volumes are writable, and the
// runtime's default seccomp profile.
func restrictedPodSecurity() *corev1ac.PodSecurityContextApplyConfiguration {
	return corev1ac.PodSecurityContext().
		WithRunAsNonRoot(true).
		WithRunAsUser(NonRootID).
		WithRunAsGroup(NonRootID).
		WithFSGroup(NonRootID).
		WithFSGroupChangePolicy(corev1.FSGroupChangeOnRootMismatch).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
}

// restrictedContainerSecurity is the container half: no privilege
// escalation, every capability dropped, a read-only root filesystem.
func restrictedContainerSecurity() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithRunAsNonRoot(true).
		WithRunAsUser(NonRootID).
		WithRunAsGroup(NonRootID).
		WithAllowPrivilegeEscalation(false).
		WithReadOnlyRootFilesystem(true).
		WithPrivileged(false).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
}

// secretEnv is an environment variable read from a Secret key.
func secretEnv(name, secret, key string) *corev1ac.EnvVarApplyConfiguration {
	return corev1ac.EnvVar().WithName(name).WithValueFrom(
		corev1ac.EnvVarSource().WithSecretKeyRef(
			corev1ac.SecretKeySelector().WithName(secret).WithKey(key)))
}

// resources converts a ResourceRequirements to its apply configuration, or
// nil when it is empty (so that nothing is claimed).
func resources(r corev1.ResourceRequirements) *corev1ac.ResourceRequirementsApplyConfiguration {
	if len(r.Limits) == 0 && len(r.Requests) == 0 && len(r.Claims) == 0 {
		return nil
	}
	ac := corev1ac.ResourceRequirements()
	if len(r.Limits) > 0 {
		ac.WithLimits(r.Limits.DeepCopy())
	}
	if len(r.Requests) > 0 {
		ac.WithRequests(r.Requests.DeepCopy())
	}
	for _, c := range r.Claims {
		cl := corev1ac.ResourceClaim().WithName(c.Name)
		if c.Request != "" {
			cl.WithRequest(c.Request)
		}
		ac.WithClaims(cl)
	}
	return ac
}

// ReadinessPeriodSeconds is how often the kubelet asks a pod whether it is
// ready. Its default, 10 s, makes a pod whose first probe lands before the
// process listens wait ten more seconds for Ready (seen on a real node as a
// GarraServer taking 11 s instead of 1 s); /readyz is cheap to answer.
const ReadinessPeriodSeconds = 2

// SandboxReadinessPeriodSeconds is the sandbox's, the shortest the kubelet
// takes: a call that wakes a suspended sandbox waits for its pod to be
// Ready (its Service sends nothing before), and the first probe, at the
// container's start, comes before the process listens, so the wake waits
// one period more (seen on a real node: 2 s of a 3 s wake).
const SandboxReadinessPeriodSeconds = 1

// readinessProbe and livenessProbe probe path on the container's named port;
// host, when set, is sent as the Host header (the gateway refuses Hosts it
// does not know). Liveness keeps the kubelet's defaults: restarting a pod is
// not something to hurry.
func readinessProbe(path, host string, periodSeconds int32) *corev1ac.ProbeApplyConfiguration {
	return httpProbe(path, host).WithPeriodSeconds(periodSeconds)
}

func livenessProbe(path, host string) *corev1ac.ProbeApplyConfiguration {
	return httpProbe(path, host)
}

func httpProbe(path, host string) *corev1ac.ProbeApplyConfiguration {
	get := corev1ac.HTTPGetAction().WithPath(path).WithPort(intstr.FromString(PortName))
	if host != "" {
		get.WithHTTPHeaders(corev1ac.HTTPHeader().WithName("Host").WithValue(host))
	}
	return corev1ac.Probe().WithHTTPGet(get)
}
