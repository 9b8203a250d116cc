package controllers

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

func TestPodSettingsProblem(t *testing.T) {
	q := resource.MustParse
	sbx := func(f func(*garrav1alpha1.SandboxSpec)) func(*garrav1alpha1.GarraServer) {
		return func(gs *garrav1alpha1.GarraServer) { f(&gs.Spec.Orchestrators[1].Sandbox) }
	}
	const field = "spec.orchestrators[n8n-prod].sandbox"
	tests := []struct {
		name   string
		mutate func(*garrav1alpha1.GarraServer)
		want   string // substring; "" = valid
	}{
		{"none set", nil, ""},
		{"everything valid", sbx(func(s *garrav1alpha1.SandboxSpec) {
			s.Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("512Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("512Mi")},
			}
			s.RuntimeClassName = ptr.To("gvisor.runsc")
			s.NodeSelector = map[string]string{"garra.garraia.io/pool": "sandbox", "kubernetes.io/arch": "amd64"}
			s.Tolerations = []corev1.Toleration{
				{Key: "sandbox", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule},
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)},
				{Operator: corev1.TolerationOpExists},
			}
		}), ""},
		{"a request without a limit", sbx(func(s *garrav1alpha1.SandboxSpec) {
			s.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: q("4")}
		}), ""},
		{"request above limit", sbx(func(s *garrav1alpha1.SandboxSpec) {
			s.Resources.Requests = corev1.ResourceList{corev1.ResourceMemory: q("1Gi")}
		}), field + ".resources.requests.memory: 1Gi is more than its limit 512Mi"},
		{"negative limit", sbx(func(s *garrav1alpha1.SandboxSpec) {
			s.Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: q("-1")}
		}), field + ".resources.limits.cpu: -1 must not be negative"},
		{"gateway request above limit", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("2")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("1")},
			}
		}, "spec.gateway.resources.requests.cpu: 2 is more than its limit 1"},
		{"runtime class not a subdomain", sbx(func(s *garrav1alpha1.SandboxSpec) { s.RuntimeClassName = ptr.To("gVisor") }),
			field + `.runtimeClassName: "gVisor" must be a DNS-1123 subdomain`},
		{"empty runtime class", sbx(func(s *garrav1alpha1.SandboxSpec) { s.RuntimeClassName = ptr.To("") }),
			field + `.runtimeClassName: "" must be a DNS-1123 subdomain`},
		{"node selector key", sbx(func(s *garrav1alpha1.SandboxSpec) { s.NodeSelector = map[string]string{"bad key": "x"} }),
			field + `.nodeSelector: key "bad key" is not a label key`},
		{"node selector value", sbx(func(s *garrav1alpha1.SandboxSpec) { s.NodeSelector = map[string]string{"pool": "a b"} }),
			field + `.nodeSelector[pool]: "a b" is not a label value`},
		{"toleration operator", sbx(func(s *garrav1alpha1.SandboxSpec) {
			s.Tolerations = []corev1.Toleration{{Key: "k", Operator: "Lt", Value: "3"}}
		}), field + `.tolerations[0].operator: "Lt" is not Exists or Equal`},
		{"exists with a value", sbx(func(s *garrav1alpha1.SandboxSpec) {
			s.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}}
		}), field + ".tolerations[0].value: must be empty when operator is Exists"},
		{"equal without a key", sbx(func(s *garrav1alpha1.SandboxSpec) {
			s.Tolerations = []corev1.Toleration{{Key: "ok"}, {Value: "v"}}
		}), field + ".tolerations[1].key: an empty key needs operator Exists"},
		{"bad key", sbx(func(s *garrav1alpha1.SandboxSpec) { s.Tolerations = []corev1.Toleration{{Key: "-k-"}} }),
			field + `.tolerations[0].key: "-k-" is not a label key`},
		{"bad effect", sbx(func(s *garrav1alpha1.SandboxSpec) { s.Tolerations = []corev1.Toleration{{Key: "k", Effect: "NoRun"}} }),
			field + `.tolerations[0].effect: "NoRun" is not NoSchedule`},
		{"required tools", sbx(func(s *garrav1alpha1.SandboxSpec) { s.RequiredTools = []string{"go", "node", "g++"} }), ""},
		{"a required tool with shell syntax", sbx(func(s *garrav1alpha1.SandboxSpec) { s.RequiredTools = []string{"go", "make;id"} }),
			field + `.requiredTools: entry 2 ("make;id") is not a program name`},
		{"seconds without NoExecute", sbx(func(s *garrav1alpha1.SandboxSpec) {
			s.Tolerations = []corev1.Toleration{{Key: "k", Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptr.To[int64](5)}}
		}), field + ".tolerations[0].tolerationSeconds: only a NoExecute toleration has one"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gs := testServer()
			if tc.mutate != nil {
				tc.mutate(gs)
			}
			got := invalidSpec(gs, "g", "s")
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("invalidSpec = %q, want %q", got, tc.want)
			}
		})
	}
}
