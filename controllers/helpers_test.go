package controllers

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// testServer is team-a in agents with two orchestrators, defaulted as the
// API server would default it.
func testServer() *garrav1alpha1.GarraServer {
	return &garrav1alpha1.GarraServer{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: "agents", UID: "uid-1", Generation: 3},
		Spec: garrav1alpha1.GarraServerSpec{
			LLM: garrav1alpha1.LLMSpec{
				Provider:        garrav1alpha1.ProviderOpenRouter,
				Model:           "z-ai/glm-5.3-flash",
				APIKeySecretRef: &garrav1alpha1.SecretKeySelector{Name: "llm-keys", Key: "openrouter"},
			},
			Gateway: garrav1alpha1.GatewaySpec{
				AllowAgent:           true,
				AskBudgetPerMinute:   10,
				AgentBudgetPerMinute: 2,
				AgentMaxSeconds:      300,
				MaxHistoryMessages:   50,
				RateLimitPerMinute:   120,
				RedactPatterns:       []string{"corp-[0-9]{6}"},
				Storage:              garrav1alpha1.StorageSpec{Size: resource.MustParse("1Gi")},
			},
			Orchestrators: []garrav1alpha1.OrchestratorSpec{
				{
					Name: "badgood",
					OrchestratorSettings: garrav1alpha1.OrchestratorSettings{
						Tools:     []garrav1alpha1.Tool{garrav1alpha1.ToolStatus, garrav1alpha1.ToolAgent},
						Workspace: garrav1alpha1.WorkspaceSpec{StorageSpec: garrav1alpha1.StorageSpec{Size: resource.MustParse("2Gi")}},
						Sandbox:   garrav1alpha1.SandboxSpec{Egress: garrav1alpha1.EgressNone},
					},
				},
				{
					Name: "n8n-prod",
					OrchestratorSettings: garrav1alpha1.OrchestratorSettings{
						Tools:          []garrav1alpha1.Tool{garrav1alpha1.ToolStatus, garrav1alpha1.ToolListChats},
						Chats:          []string{"telegram:42"},
						TokenSecretRef: &garrav1alpha1.SecretKeySelector{Name: "n8n-token", Key: "token"},
						Workspace: garrav1alpha1.WorkspaceSpec{
							StorageSpec: garrav1alpha1.StorageSpec{Size: resource.MustParse("1Gi"), StorageClassName: "fast"},
							Retain:      true,
						},
						Sandbox: garrav1alpha1.SandboxSpec{
							Image:  "garra-sandbox:custom",
							Egress: garrav1alpha1.EgressInternet,
							Resources: corev1.ResourceRequirements{
								Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
							},
						},
					},
				},
			},
		},
	}
}

// typed converts an apply configuration to the typed object it describes.
func typed[T any](t *testing.T, ac any) *T {
	t.Helper()
	data, err := json.Marshal(ac)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkOwned asserts the labels and the controller owner reference of a child.
func checkOwned(t *testing.T, meta metav1.ObjectMeta, wantLabels map[string]string, owned bool) {
	t.Helper()
	if len(meta.Labels) != len(wantLabels) {
		t.Errorf("%s labels = %v, want %v", meta.Name, meta.Labels, wantLabels)
	}
	for k, v := range wantLabels {
		if meta.Labels[k] != v {
			t.Errorf("%s label %s = %q, want %q", meta.Name, k, meta.Labels[k], v)
		}
	}
	if !owned {
		if len(meta.OwnerReferences) != 0 {
			t.Errorf("%s owner references = %v, want none", meta.Name, meta.OwnerReferences)
		}
		return
	}
	if len(meta.OwnerReferences) != 1 {
		t.Fatalf("%s owner references = %v, want one", meta.Name, meta.OwnerReferences)
	}
	ref := meta.OwnerReferences[0]
	if ref.APIVersion != "garra.garraia.io/v1alpha1" || ref.Kind != "GarraServer" || ref.Name != "team-a" || ref.UID != "uid-1" ||
		ref.Controller == nil || !*ref.Controller || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
		t.Errorf("%s owner reference = %+v", meta.Name, ref)
	}
}

func gatewayLabels() map[string]string {
	return map[string]string{LabelName: "garra", LabelInstance: "team-a", LabelComponent: "gateway"}
}

func sandboxLabels(o string) map[string]string {
	return map[string]string{LabelName: "garra", LabelInstance: "team-a", LabelComponent: "sandbox", LabelOrchestrator: o}
}

// envFrom maps a container's variables to "secret/key" or "=value".
func envFrom(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			out[e.Name] = e.ValueFrom.SecretKeyRef.Name + "/" + e.ValueFrom.SecretKeyRef.Key
		case e.ValueFrom != nil:
			out[e.Name] = "?other source"
		default:
			out[e.Name] = "=" + e.Value
		}
	}
	return out
}

// projectedFiles maps each file of pod's projected volume to the Secret key
// it comes from ("secret/key"), by its path under the volume's mount, and
// returns the volume's default mode (-1 when unset).
func projectedFiles(pod corev1.PodSpec, volume string) (map[string]string, int32) {
	out := map[string]string{}
	mode := int32(-1)
	for _, v := range pod.Volumes {
		if v.Name != volume || v.Projected == nil {
			continue
		}
		if v.Projected.DefaultMode != nil {
			mode = *v.Projected.DefaultMode
		}
		for _, src := range v.Projected.Sources {
			if src.Secret == nil {
				out["?non-secret source"] = ""
				continue
			}
			for _, it := range src.Secret.Items {
				out[it.Path] = src.Secret.Name + "/" + it.Key
			}
		}
	}
	return out, mode
}

func mounts(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, m := range c.VolumeMounts {
		out[m.MountPath] = m.Name
		if m.ReadOnly {
			out[m.MountPath] += " (ro)"
		}
	}
	return out
}

func eqMap(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
		return
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s[%s] = %q, want %q (all: %v)", what, k, got[k], v, got)
		}
	}
}

// reporter is what checkRestricted needs of *testing.T (or GinkgoT()).
type reporter interface {
	Helper()
	Error(args ...any)
	Errorf(format string, args ...any)
}

// checkRestricted asserts the "restricted" Pod Security Standard, and
// that the pod gets an API credential exactly when apiToken says (the
// gateway watches its policy objects; a sandbox has no API access).
func checkRestricted(t reporter, pod corev1.PodSpec, apiToken bool) {
	t.Helper()
	ps := pod.SecurityContext
	if ps == nil || ps.RunAsNonRoot == nil || !*ps.RunAsNonRoot || ps.RunAsUser == nil || *ps.RunAsUser != 65532 ||
		ps.RunAsGroup == nil || *ps.RunAsGroup != 65532 || ps.FSGroup == nil || *ps.FSGroup != 65532 ||
		ps.SeccompProfile == nil || ps.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context = %+v", ps)
	}
	if mounted := pod.AutomountServiceAccountToken != nil && *pod.AutomountServiceAccountToken; mounted != apiToken {
		t.Errorf("service account token mounted: %t, want %t", mounted, apiToken)
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Error("host namespaces shared")
	}
	for _, v := range pod.Volumes {
		if v.HostPath != nil {
			t.Errorf("hostPath volume %s", v.Name)
		}
	}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
			sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
			sc.Privileged == nil || *sc.Privileged ||
			sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0 ||
			sc.SeccompProfile == nil || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("container %s security context = %+v", c.Name, sc)
		}
	}
}
