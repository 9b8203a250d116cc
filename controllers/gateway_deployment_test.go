package controllers

import (
	"encoding/json"
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
		wantOwner string // secret/key of the owner key file
		check     func(*testing.T, *appsv1.Deployment)
	}{
		{
			name: "generated key, two orchestrators",
			wantEnv: map[string]string{
				"HOME":              "=/tmp",
				"GARRA_LLM_API_KEY": "llm-keys/openrouter",
			},
			wantOwner: "team-a-gateway/api-key",
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
			wantOwner: "team-a-gateway/api-key",
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
			wantOwner: "my-key/api-key",
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
			d := typed[appsv1.Deployment](t, gatewayDeployment(gs, false, "garra:1", "h1"))
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
			checkRestricted(t, pod, true)
			if len(pod.Containers) != 1 {
				t.Fatalf("containers = %d", len(pod.Containers))
			}
			c := pod.Containers[0]
			if c.Image != "garra:1" || !slices.Equal(c.Command, []string{"garra", "gateway", "--config", "/etc/garra/config.yml"}) {
				t.Errorf("image %q command %v", c.Image, c.Command)
			}
			// The policy watch: exactly the objects the files come from.
			if want := []string{"--watch-namespace", "agents", "--watch-configmap", "team-a-gateway", "--watch-secret", "team-a-gateway-tokens",
				"--watch-secret-dir", "/var/run/garra/tokens"}; !slices.Equal(c.Args, want) {
				t.Errorf("args %v, want %v", c.Args, want)
			}
			if len(c.Ports) != 1 || c.Ports[0].Name != "mcp" || c.Ports[0].ContainerPort != 3888 || c.Ports[0].Protocol != corev1.ProtocolTCP {
				t.Errorf("ports = %+v", c.Ports)
			}
			eqMap(t, "env", envFrom(c), tc.wantEnv)
			eqMap(t, "mounts", mounts(c), map[string]string{"/etc/garra": "config (ro)", "/var/lib/garra": "data", "/tmp": "tmp",
				"/var/run/garra/owner": "owner-key (ro)", "/var/run/garra/tokens": "tokens (ro)"})
			for _, m := range c.VolumeMounts {
				if m.SubPath != "" {
					t.Errorf("mount %s uses subPath %q: the kubelet would never update it", m.MountPath, m.SubPath)
				}
			}
			if g := pod.TerminationGracePeriodSeconds; g == nil || *g != 40 {
				t.Errorf("terminationGracePeriodSeconds = %v, want drainSeconds 30 + 10", g)
			}
			vols := map[string]corev1.Volume{}
			for _, v := range pod.Volumes {
				vols[v.Name] = v
			}
			// The gateway's own credentials: read-only files for owner and
			// group (the pod's fsGroup) only.
			if v := vols["owner-key"].Secret; v == nil || v.DefaultMode == nil || *v.DefaultMode != 0o440 || len(v.Items) != 1 ||
				v.SecretName+"/"+v.Items[0].Key != tc.wantOwner || v.Items[0].Path != "api-key" {
				t.Errorf("owner-key volume = %+v, want %s as api-key, mode 0440", v, tc.wantOwner)
			}
			if v := vols["tokens"].Secret; v == nil || v.SecretName != "team-a-gateway-tokens" || len(v.Items) != 0 ||
				v.DefaultMode == nil || *v.DefaultMode != 0o440 {
				t.Errorf("tokens volume = %+v, want all of team-a-gateway-tokens, mode 0440", v)
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

// TestGatewayTemplateIgnoresPolicy: what the gateway reloads live (the
// orchestrators, their tools, chats and tokens, budgets, models, redact
// patterns) leaves its pod template as it is; what needs a new process
// (image, resources, the variables' Secret references and values, the
// drain) changes it.
func TestGatewayTemplateIgnoresPolicy(t *testing.T) {
	values := map[string][]byte{"llm-keys/openrouter": []byte("sk-1"), "team-a-gateway/api-key": []byte("owner")}
	template := func(gs *garrav1alpha1.GarraServer, image string, values map[string][]byte) string {
		t.Helper()
		s := &reconcileState{gs: gs, values: values}
		d := typed[appsv1.Deployment](t, gatewayDeployment(gs, false, image, s.gatewayHash()))
		out, err := json.Marshal(d.Spec.Template)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	base := template(testServer(), "garra:1", values)
	for _, tc := range []struct {
		name   string
		change func(*garrav1alpha1.GarraServer)
		image  string
		values map[string][]byte
		rolls  bool
	}{
		{name: "an orchestrator added", change: func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators = append(gs.Spec.Orchestrators, garrav1alpha1.OrchestratorSpec{Name: "third"})
		}},
		{name: "an orchestrator removed", change: func(gs *garrav1alpha1.GarraServer) { gs.Spec.Orchestrators = gs.Spec.Orchestrators[:1] }},
		{name: "tools and chats", change: func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].Tools = []garrav1alpha1.Tool{"status"}
			gs.Spec.Orchestrators[1].Chats = []string{"telegram:1"}
		}},
		{name: "a bring-your-own token reference", change: func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].TokenSecretRef = &garrav1alpha1.SecretKeySelector{Name: "other", Key: "t"}
		}},
		{name: "budgets, models, redact, rate limit", change: func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.AskBudgetPerMinute = 99
			gs.Spec.Gateway.AgentBudgetPerMinute = 7
			gs.Spec.Gateway.AskAllowedModels = []string{"m"}
			gs.Spec.Gateway.RedactPatterns = nil
			gs.Spec.Gateway.RateLimitPerMinute = 5
			gs.Spec.LLM.Model = "other"
		}},
		{name: "token values", values: map[string][]byte{"llm-keys/openrouter": []byte("sk-1"), "team-a-gateway/api-key": []byte("owner"),
			"team-a-orch-badgood/token": []byte("new"), "n8n-token/token": []byte("new")}},
		{name: "the image", image: "garra:2", rolls: true},
		{name: "resources", change: func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}, rolls: true},
		{name: "the LLM key reference", change: func(gs *garrav1alpha1.GarraServer) { gs.Spec.LLM.APIKeySecretRef.Key = "other" }, rolls: true},
		{name: "the LLM key value", values: map[string][]byte{"llm-keys/openrouter": []byte("sk-2"), "team-a-gateway/api-key": []byte("owner")}, rolls: true},
		{name: "the owner key value", values: map[string][]byte{"llm-keys/openrouter": []byte("sk-1"), "team-a-gateway/api-key": []byte("new")}, rolls: true},
		{name: "the drain", change: func(gs *garrav1alpha1.GarraServer) { gs.Spec.Gateway.DrainSeconds = 120 }, rolls: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gs := testServer()
			if tc.change != nil {
				tc.change(gs)
			}
			image, vals := "garra:1", values
			if tc.image != "" {
				image = tc.image
			}
			if tc.values != nil {
				vals = tc.values
			}
			if rolled := template(gs, image, vals) != base; rolled != tc.rolls {
				t.Errorf("pod template changed = %v, want %v", rolled, tc.rolls)
			}
		})
	}
}

// Replicas above one need the shared store: with SQLite the template keeps
// one pod on its claim whatever the spec says (a spec the API server did
// not validate).
func TestGatewayReplicas(t *testing.T) {
	for _, tc := range []struct {
		driver   string
		replicas int32
		want     int32
	}{
		{"", 0, 1}, {garrav1alpha1.StoreSQLite, 3, 1}, {garrav1alpha1.StorePostgres, 0, 1},
		{garrav1alpha1.StorePostgres, 1, 1}, {garrav1alpha1.StorePostgres, 3, 3},
	} {
		gs := testServer()
		gs.Spec.Gateway.Replicas = tc.replicas
		gs.Spec.Gateway.Store.Driver = tc.driver
		if got := gatewayReplicas(gs); got != tc.want {
			t.Errorf("driver %q replicas %d: %d, want %d", tc.driver, tc.replicas, got, tc.want)
		}
		dep := typed[appsv1.Deployment](t, gatewayDeployment(gs, false, "garra:test", ""))
		if *dep.Spec.Replicas != tc.want {
			t.Errorf("driver %q replicas %d: Deployment has %d", tc.driver, tc.replicas, *dep.Spec.Replicas)
		}
		claim := false
		for _, v := range dep.Spec.Template.Spec.Volumes {
			claim = claim || v.PersistentVolumeClaim != nil
		}
		if claim == (tc.driver == garrav1alpha1.StorePostgres) {
			t.Errorf("driver %q: data claim mounted = %v", tc.driver, claim)
		}
		// The kubelet's SIGKILL waits for the handover too.
		wantGrace := int64(defaultDrainSeconds + DrainMarginSeconds)
		if tc.driver == garrav1alpha1.StorePostgres {
			wantGrace += HandoverSeconds
		}
		if g := dep.Spec.Template.Spec.TerminationGracePeriodSeconds; g == nil || *g != wantGrace {
			t.Errorf("driver %q: terminationGracePeriodSeconds %v, want %d", tc.driver, g, wantGrace)
		}
	}
}
