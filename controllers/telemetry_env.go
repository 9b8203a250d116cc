package controllers

import (
	"net/url"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/otelenv"
)

// Service names of the two kinds of pod, as their spans say them.
const (
	ServiceGateway = "garra-gateway"
	ServiceSandbox = "garra-sandbox"
)

// telemetryEnv is spec.telemetry as the standard OTEL_* variables of one
// container (none without spec.telemetry), so that the binaries read the
// same variables in a pod as on a laptop.
func telemetryEnv(gs *garrav1alpha1.GarraServer, service string) []*corev1ac.EnvVarApplyConfiguration {
	t := gs.Spec.Telemetry
	if t == nil {
		return nil
	}
	env := []*corev1ac.EnvVarApplyConfiguration{
		corev1ac.EnvVar().WithName(otelenv.Endpoint).WithValue(t.OTLPEndpoint),
		corev1ac.EnvVar().WithName(otelenv.ServiceName).WithValue(service),
	}
	if t.Sampler != "" {
		env = append(env, corev1ac.EnvVar().WithName(otelenv.Sampler).WithValue(t.Sampler))
	}
	if t.SamplerRatio != "" {
		env = append(env, corev1ac.EnvVar().WithName(otelenv.SamplerArg).WithValue(t.SamplerRatio))
	}
	return env
}

// telemetryProblem is what is wrong with spec.telemetry, for a CRD
// installed without its schema rules: the message names the field and
// never repeats the URL (its userinfo may hold a credential).
func telemetryProblem(gs *garrav1alpha1.GarraServer) string {
	t := gs.Spec.Telemetry
	if t == nil {
		return ""
	}
	if u, err := url.Parse(t.OTLPEndpoint); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return "spec.telemetry.otlpEndpoint must be an http or https URL (the collector's OTLP/HTTP base, e.g. http://otel-collector.observability:4318)"
	}
	if _, _, err := otelenv.CheckSampler(t.Sampler, t.SamplerRatio); err != nil {
		return "spec.telemetry.sampler/samplerRatio: the sampler must be one of the OTEL_TRACES_SAMPLER names and the ratio a number from 0 to 1"
	}
	return ""
}
