package controllers

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// spec.telemetry becomes the standard OTEL_* variables of the gateway and
// of every sandbox, each with its own service name; without it, none.
func TestTelemetryEnv(t *testing.T) {
	otel := func(env map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range env {
			if len(k) > 5 && k[:5] == "OTEL_" {
				out[k] = v
			}
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		spec    *garrav1alpha1.TelemetrySpec
		gateway map[string]string
		sandbox map[string]string
	}{
		{name: "absent", spec: nil, gateway: map[string]string{}, sandbox: map[string]string{}},
		{name: "endpoint only", spec: &garrav1alpha1.TelemetrySpec{OTLPEndpoint: "http://otel-collector.observability:4318"},
			gateway: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "=http://otel-collector.observability:4318", "OTEL_SERVICE_NAME": "=garra-gateway"},
			sandbox: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "=http://otel-collector.observability:4318", "OTEL_SERVICE_NAME": "=garra-sandbox"}},
		{name: "sampler and ratio", spec: &garrav1alpha1.TelemetrySpec{OTLPEndpoint: "https://c.example", Sampler: "parentbased_traceidratio", SamplerRatio: "0.1"},
			gateway: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "=https://c.example", "OTEL_SERVICE_NAME": "=garra-gateway",
				"OTEL_TRACES_SAMPLER": "=parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "=0.1"},
			sandbox: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "=https://c.example", "OTEL_SERVICE_NAME": "=garra-sandbox",
				"OTEL_TRACES_SAMPLER": "=parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "=0.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs := testServer()
			gs.Spec.Telemetry = tc.spec
			gw := envFrom(typed[appsv1.Deployment](t, gatewayDeployment(gs, false, "garra:1", "h")).Spec.Template.Spec.Containers[0])
			eqMap(t, "gateway OTEL env", otel(gw), tc.gateway)
			if gw["HOME"] != "=/tmp" || gw["GARRA_LLM_API_KEY"] != "llm-keys/openrouter" {
				t.Errorf("gateway env lost its other variables: %v", gw)
			}
			for _, o := range gs.Spec.Orchestrators {
				sb := envFrom(typed[appsv1.Deployment](t, sandboxDeployment(gs, inlineMember(gs, o), sandboxImages{Sandbox: "sbx:1"}, nil)).Spec.Template.Spec.Containers[0])
				eqMap(t, "sandbox "+o.Name+" OTEL env", otel(sb), tc.sandbox)
				if sb["HOME"] != "=/tmp" || len(sb) != len(tc.sandbox)+1 {
					t.Errorf("sandbox %s env = %v", o.Name, sb)
				}
			}
		})
	}
}
