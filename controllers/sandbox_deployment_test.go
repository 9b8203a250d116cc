package controllers

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

func TestSandboxDeployment(t *testing.T) {
	gs := testServer()
	tests := []struct {
		orch, defImage, wantImage, wantMemLimit string
		own                                     bool // an image of the user's: garra copied in
	}{
		{"badgood", "garra:def", "garra:def", "", false},
		{"n8n-prod", "garra:def", "garra-sandbox:custom", "512Mi", true},
	}
	for _, tc := range tests {
		t.Run(tc.orch, func(t *testing.T) {
			o := findOrch(t, gs, tc.orch)
			d := typed[appsv1.Deployment](t, sandboxDeployment(gs, inlineMember(gs, o), resolveSandboxImages(gs, inlineMember(gs, o), tc.defImage, "garra:gw"), nil))
			name := "team-a-sandbox-" + tc.orch
			if d.Name != name || d.Namespace != "agents" {
				t.Errorf("name = %s/%s", d.Namespace, d.Name)
			}
			checkOwned(t, d.ObjectMeta, sandboxLabels(tc.orch), true)
			if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
				t.Errorf("replicas/strategy = %v/%v", *d.Spec.Replicas, d.Spec.Strategy)
			}
			eqMap(t, "selector", d.Spec.Selector.MatchLabels, sandboxLabels(tc.orch))
			eqMap(t, "pod labels", d.Spec.Template.Labels, sandboxLabels(tc.orch))
			eqMap(t, "pod annotations", d.Spec.Template.Annotations, map[string]string{})

			pod := d.Spec.Template.Spec
			checkRestricted(t, pod, false)
			if pod.ServiceAccountName != name {
				t.Errorf("service account = %q", pod.ServiceAccountName)
			}
			if g := pod.TerminationGracePeriodSeconds; g == nil || *g != 40 {
				t.Errorf("terminationGracePeriodSeconds = %v, want drainSeconds 30 + 10", g)
			}
			if pod.EnableServiceLinks == nil || *pod.EnableServiceLinks {
				t.Error("service links enabled")
			}
			c := pod.Containers[0]
			bin, home := "garra", "/tmp"
			wantMounts := map[string]string{"/workspace": "workspace", "/tmp": "tmp", "/var/run/garra": "token (ro)"}
			wantVolumes := []string{"workspace", "tmp", "token"}
			if tc.own {
				bin, home = "/garra/bin/garra", "/home/garra"
				wantMounts["/garra/bin"] = "garra-bin (ro)"
				wantMounts["/home/garra"] = "home"
				wantVolumes = append(wantVolumes, "garra-bin", "home")
				checkCopyContainer(t, pod, "garra:gw")
				if c.WorkingDir != "/workspace" {
					t.Errorf("workingDir = %q, want the workspace (the image's own WORKDIR may not be writable)", c.WorkingDir)
				}
			} else if len(pod.InitContainers) != 0 || c.WorkingDir != "" {
				t.Errorf("the default image got init containers %v or a workingDir %q: its pod must stay as it was", pod.InitContainers, c.WorkingDir)
			}
			if c.Image != tc.wantImage || !slices.Equal(c.Command, []string{bin, "sandbox", "--workspace", "/workspace", "--listen", ":8080", "--token-file", "/var/run/garra/sandbox-token", "--drain-seconds", "30"}) {
				t.Errorf("image %q command %v", c.Image, c.Command)
			}
			if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 8080 || c.Ports[0].Name != "mcp" {
				t.Errorf("ports = %+v", c.Ports)
			}
			// No secret in the environment; as its only file, its own
			// sandbox token lines from a Secret of its own: no LLM key, no
			// gateway key, no other orchestrator's token, and never the
			// gateway's tokens Secret that holds them all.
			eqMap(t, "env", envFrom(c), map[string]string{"HOME": "=" + home})
			eqMap(t, "mounts", mounts(c), wantMounts)
			files, mode := projectedFiles(pod, "token")
			eqMap(t, "token files", files, map[string]string{"sandbox-token": "team-a-sandbox-" + tc.orch + "/sandbox-token"})
			if mode != 0o440 {
				t.Errorf("token mode = %o", mode)
			}
			for _, v := range pod.Volumes {
				switch v.Name {
				case "workspace":
					if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "team-a-ws-"+tc.orch {
						t.Errorf("workspace volume = %+v", v)
					}
				case "tmp":
					if v.EmptyDir == nil {
						t.Errorf("tmp volume = %+v", v)
					}
				case "token":
				case "garra-bin", "home":
					if v.EmptyDir == nil {
						t.Errorf("%s volume = %+v", v.Name, v)
					}
				default:
					t.Errorf("unexpected volume %s", v.Name)
				}
			}
			if got := volumeNames(pod); !slices.Equal(got, wantVolumes) {
				t.Errorf("volumes = %v, want %v", got, wantVolumes)
			}
			q, limited := c.Resources.Limits[corev1.ResourceMemory]
			if limited != (tc.wantMemLimit != "") || (limited && q.String() != tc.wantMemLimit) {
				t.Errorf("memory limit = %s, want %q", q.String(), tc.wantMemLimit)
			}
			if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
				t.Errorf("probes = %+v %+v", c.ReadinessProbe, c.LivenessProbe)
			} else if c.ReadinessProbe.PeriodSeconds != SandboxReadinessPeriodSeconds || c.LivenessProbe.PeriodSeconds != 0 {
				t.Errorf("probe periods = readiness %d s, liveness %d s; want %d s and the kubelet default",
					c.ReadinessProbe.PeriodSeconds, c.LivenessProbe.PeriodSeconds, SandboxReadinessPeriodSeconds)
			}
		})
	}
}

func volumeNames(pod corev1.PodSpec) []string {
	var out []string
	for _, v := range pod.Volumes {
		out = append(out, v.Name)
	}
	return out
}

// checkCopyContainer asserts the init container that brings garra into an
// image of the user's.
func checkCopyContainer(t *testing.T, pod corev1.PodSpec, garraImage string) {
	t.Helper()
	if len(pod.InitContainers) != 1 {
		t.Fatalf("init containers = %+v, want the copy", pod.InitContainers)
	}
	ic := pod.InitContainers[0]
	if ic.Name != "copy-garra" || ic.Image != garraImage || !slices.Equal(ic.Command, []string{"garra", "copy-binary", "/garra/bin"}) {
		t.Errorf("init container %s image %q command %v", ic.Name, ic.Image, ic.Command)
	}
	eqMap(t, "init mounts", mounts(ic), map[string]string{"/garra/bin": "garra-bin"})
	if len(ic.Env) != 0 || len(ic.EnvFrom) != 0 {
		t.Errorf("init container env = %v %v, want none", ic.Env, ic.EnvFrom)
	}
}

// TestResolveSandboxImages: only the manager's own sandbox image runs
// without a copied garra, wherever the other image comes from.
func TestResolveSandboxImages(t *testing.T) {
	gs := testServer()
	o := gs.Spec.Orchestrators[0]
	own := func(img string) garrav1alpha1.OrchestratorSpec {
		c := o
		c.Sandbox.Image = img
		return c
	}
	tests := []struct {
		name      string
		o         garrav1alpha1.OrchestratorSpec
		specImage string // spec.sandboxImage
		specGarra string // spec.image
		want      sandboxImages
	}{
		{"the manager's default", o, "", "", sandboxImages{Sandbox: "sbx:1"}},
		{"an orchestrator's golang image", own("golang:1.26"), "", "", sandboxImages{Sandbox: "golang:1.26", Garra: "gw:1"}},
		{"spec.sandboxImage", o, "node:24", "", sandboxImages{Sandbox: "node:24", Garra: "gw:1"}},
		{"spec.sandboxImage naming the default", o, "sbx:1", "", sandboxImages{Sandbox: "sbx:1"}},
		{"the garra image from spec.image", own("corp/build:7"), "", "gw:spec", sandboxImages{Sandbox: "corp/build:7", Garra: "gw:spec"}},
		{"another tag of the sandbox image", own("sbx:2"), "", "", sandboxImages{Sandbox: "sbx:2", Garra: "gw:1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gs.Spec.SandboxImage, gs.Spec.Image = tc.specImage, tc.specGarra
			if got := resolveSandboxImages(gs, inlineMember(gs, tc.o), "sbx:1", "gw:1"); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestSandboxImage(t *testing.T) {
	gs := testServer()
	o := gs.Spec.Orchestrators[0]
	if got := sandboxImage(gs, inlineMember(gs, o), "def"); got != "def" {
		t.Errorf("default: %q", got)
	}
	gs.Spec.SandboxImage = "spec"
	if got := sandboxImage(gs, inlineMember(gs, o), "def"); got != "spec" {
		t.Errorf("spec.sandboxImage: %q", got)
	}
	o.Sandbox.Image = "own"
	if got := sandboxImage(gs, inlineMember(gs, o), "def"); got != "own" {
		t.Errorf("own: %q", got)
	}
}

// TestSandboxPlacement: runtimeClassName, nodeSelector and tolerations
// reach the pod as given, and a spec without them sets none.
func TestSandboxPlacement(t *testing.T) {
	tests := []struct {
		name    string
		sandbox garrav1alpha1.SandboxSpec
		want    corev1.PodSpec // only the three fields are compared
	}{
		{"none", garrav1alpha1.SandboxSpec{}, corev1.PodSpec{}},
		{"gvisor on a tainted pool", garrav1alpha1.SandboxSpec{
			RuntimeClassName: ptr.To("gvisor"),
			NodeSelector:     map[string]string{"pool": "sandbox"},
			Tolerations: []corev1.Toleration{
				{Key: "sandbox", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](60)},
			},
		}, corev1.PodSpec{
			RuntimeClassName: ptr.To("gvisor"),
			NodeSelector:     map[string]string{"pool": "sandbox"},
			Tolerations: []corev1.Toleration{
				{Key: "sandbox", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](60)},
			},
		}},
		{"tolerate everything", garrav1alpha1.SandboxSpec{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
			corev1.PodSpec{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			gs := testServer()
			o := gs.Spec.Orchestrators[0]
			o.Sandbox = tc.sandbox
			pod := typed[appsv1.Deployment](t, sandboxDeployment(gs, inlineMember(gs, o), sandboxImages{Sandbox: "img"}, nil)).Spec.Template.Spec
			if !reflect.DeepEqual(pod.RuntimeClassName, tc.want.RuntimeClassName) {
				t.Errorf("runtimeClassName = %v, want %v", pod.RuntimeClassName, tc.want.RuntimeClassName)
			}
			if !reflect.DeepEqual(pod.NodeSelector, tc.want.NodeSelector) {
				t.Errorf("nodeSelector = %v, want %v", pod.NodeSelector, tc.want.NodeSelector)
			}
			if !reflect.DeepEqual(pod.Tolerations, tc.want.Tolerations) {
				t.Errorf("tolerations = %+v, want %+v", pod.Tolerations, tc.want.Tolerations)
			}
		})
	}
}

// TestSandboxRequiredTools: the required tools become one flag of the
// command, and no flag when there are none (the pod stays as it was).
func TestSandboxRequiredTools(t *testing.T) {
	gs := testServer()
	o := gs.Spec.Orchestrators[0]
	base := SandboxCommand(gs, inlineMember(gs, o), "garra")
	if slices.ContainsFunc(base, func(a string) bool { return strings.HasPrefix(a, "--required-tools") }) {
		t.Errorf("no required tools, yet %v", base)
	}
	o.Sandbox.RequiredTools = []string{"go", "node", "make"}
	c := typed[appsv1.Deployment](t, sandboxDeployment(gs, inlineMember(gs, o), sandboxImages{Sandbox: "img"}, nil)).Spec.Template.Spec.Containers[0]
	if want := append(slices.Clone(base), "--required-tools=go,node,make"); !slices.Equal(c.Command, want) {
		t.Errorf("command = %v, want %v", c.Command, want)
	}
}
