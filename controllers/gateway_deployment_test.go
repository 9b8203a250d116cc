package controllers

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

func TestGatewayDeployment(t *testing.T) {
	tests := []struct {
		name      string
		mutate    func(*garrav1alpha1.GarraServer)
		wantEnv   map[string]string
		wantFiles map[string]string // under /var/run/garra
		check     func(*testing.T, *appsv1.Deployment)
	}{
		{
			name: "generated key, two orchestrators",
			wantEnv: map[string]string{
				"HOME":              "=/tmp",
				"GARRA_LLM_API_KEY": "llm-keys/openrouter",
			},
			wantFiles: map[string]string{
				"api-key":                 "team-a-gateway/api-key",
				"tokens/badgood":          "team-a-orch-badgood/token",
				"sandbox-tokens/badgood":  "team-a-orch-badgood/sandbox-token",
				"tokens/n8n-prod":         "n8n-token/token",
				"sandbox-tokens/n8n-prod": "team-a-orch-n8n-prod/sandbox-token",
			},
			check: func(t *testing.T, d *appsv1.Deployment) {
				if c := d.Spec.Template.Spec.Containers[0]; c.Resources.Limits != nil || c.Resources.Requests != nil {
					t.Errorf("resources = %+v, want none", c.Resources)
				}
			},
		},
		{
			name: "web search key",
			mutate: func(gs *garrav1alpha1.GarraServer) {
				gs.Spec.Gateway.WebSearch = &garrav1alpha1.WebSearchSpec{APIKeySecretRef: garrav1alpha1.SecretKeySelector{Name: "brave", Key: "api"}}
				gs.Spec.Orchestrators = nil
			},
			wantEnv: map[string]string{
				"HOME":              "=/tmp",
				"GARRA_LLM_API_KEY": "llm-keys/openrouter",
				"BRAVE_API_KEY":     "brave/api",
			},
			wantFiles: map[string]string{"api-key": "team-a-gateway/api-key"},
		},
		{
			name: "BYO key, telegram token, resources",
			mutate: func(gs *garrav1alpha1.GarraServer) {
				gs.Spec.Gateway.APIKeySecretRef = &garrav1alpha1.SecretKeySelector{Name: "my-key", Key: "api-key"}
				gs.Spec.Channels = &garrav1alpha1.ChannelsSpec{Telegram: &garrav1alpha1.TelegramSpec{
					BotTokenSecretRef: &garrav1alpha1.SecretKeySelector{Name: "tg", Key: "token"}}}
				gs.Spec.Orchestrators = nil
				gs.Spec.Gateway.Resources = corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}
			},
			wantEnv: map[string]string{
				"HOME":               "=/tmp",
				"GARRA_LLM_API_KEY":  "llm-keys/openrouter",
				"TELEGRAM_BOT_TOKEN": "tg/token",
			},
			wantFiles: map[string]string{"api-key": "my-key/api-key"},
			check: func(t *testing.T, d *appsv1.Deployment) {
				c := d.Spec.Template.Spec.Containers[0]
				if q := c.Resources.Requests[corev1.ResourceCPU]; q.String() != "100m" {
					t.Errorf("cpu request = %s", q.String())
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gs := testServer()
			if tc.mutate != nil {
				tc.mutate(gs)
			}
			d := typed[appsv1.Deployment](t, gatewayDeployment(gs, "garra:1", "h1"))
			if d.Name != "team-a-gateway" || d.Namespace != "agents" {
				t.Errorf("name = %s/%s", d.Namespace, d.Name)
			}
			checkOwned(t, d.ObjectMeta, gatewayLabels(), true)
			if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
				t.Errorf("replicas/strategy = %v/%v", d.Spec.Replicas, d.Spec.Strategy)
			}
			eqMap(t, "selector", d.Spec.Selector.MatchLabels, gatewayLabels())
			eqMap(t, "pod labels", d.Spec.Template.Labels, gatewayLabels())
			eqMap(t, "pod annotations", d.Spec.Template.Annotations, map[string]string{AnnotationInputsHash: "h1"})

			pod := d.Spec.Template.Spec
			checkRestricted(t, pod)
			if len(pod.Containers) != 1 {
				t.Fatalf("containers = %d", len(pod.Containers))
			}
			c := pod.Containers[0]
			if c.Image != "garra:1" || !slices.Equal(c.Command, []string{"garra", "gateway", "--config", "/etc/garra/config.yml"}) {
				t.Errorf("image %q command %v", c.Image, c.Command)
			}
			if len(c.Ports) != 1 || c.Ports[0].Name != "mcp" || c.Ports[0].ContainerPort != 3888 || c.Ports[0].Protocol != corev1.ProtocolTCP {
				t.Errorf("ports = %+v", c.Ports)
			}
			eqMap(t, "env", envFrom(c), tc.wantEnv)
			eqMap(t, "mounts", mounts(c), map[string]string{"/etc/garra": "config (ro)", "/var/lib/garra": "data", "/tmp": "tmp",
				"/var/run/garra": "secrets (ro)"})
			// The gateway's own credentials: one read-only file each, for
			// owner and group (the pod's fsGroup) only.
			files, mode := projectedFiles(pod, "secrets")
			eqMap(t, "secret files", files, tc.wantFiles)
			if mode != 0o440 {
				t.Errorf("secret files mode = %#o, want 0440", mode)
			}
			vols := map[string]corev1.Volume{}
			for _, v := range pod.Volumes {
				vols[v.Name] = v
			}
			if v := vols["config"]; v.ConfigMap == nil || v.ConfigMap.Name != "team-a-gateway" {
				t.Errorf("config volume = %+v", v)
			}
			if v := vols["data"]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "team-a-gateway-data" {
				t.Errorf("data volume = %+v", v)
			}
			if v := vols["tmp"]; v.EmptyDir == nil {
				t.Errorf("tmp volume = %+v", v)
			}
			for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
				if p == nil || p.HTTPGet == nil || p.HTTPGet.Port.StrVal != "mcp" || len(p.HTTPGet.HTTPHeaders) != 1 ||
					p.HTTPGet.HTTPHeaders[0].Value != "team-a-gateway" {
					t.Errorf("probe = %+v", p)
				}
			}
			if got := c.ReadinessProbe.PeriodSeconds; got != ReadinessPeriodSeconds {
				t.Errorf("readiness period = %d s, want %d s", got, ReadinessPeriodSeconds)
			}
			if got := c.LivenessProbe.PeriodSeconds; got != 0 {
				t.Errorf("liveness period = %d s, want the kubelet default", got)
			}
			if tc.check != nil {
				tc.check(t, d)
			}
		})
	}
}
