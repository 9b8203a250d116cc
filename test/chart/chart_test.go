// Package chart tests the Helm chart charts/garra-operator with Helm's Go
// library: it lints the chart, renders it with default and custom values,
// decodes every object strictly with the Kubernetes scheme, and checks the
// CRD and the RBAC rules against config/ (what controller-gen generates).
package chart

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
	"helm.sh/helm/v4/pkg/chart/v2/lint"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/yaml"
)

const (
	repoRoot    = "../.."
	releaseName = "garra-operator"
	releaseNS   = "garra-system"
)

// crdFiles are the CRDs of config/crd/bases the chart ships, by kind.
var crdFiles = map[string]string{
	"GarraServer":  "garra.garraia.io_garraservers.yaml",
	"Orchestrator": "garra.garraia.io_orchestrators.yaml",
}

var (
	chartDir = filepath.Join(repoRoot, "charts", "garra-operator")

	// strict decodes built-in kinds and refuses unknown or duplicate fields,
	// so a typo in a template fails here rather than at `kubectl apply`.
	strict = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, clientgoscheme.Scheme, clientgoscheme.Scheme,
		kjson.SerializerOptions{Yaml: true, Strict: true})

	serviceMonitorGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}
)

func init() {
	if err := apiextensionsv1.AddToScheme(clientgoscheme.Scheme); err != nil {
		panic(err)
	}
}

// manifest is one rendered object.
type manifest struct {
	source string // template file
	obj    runtime.Object
	gvk    schema.GroupVersionKind
}

// rendered is a release's objects, by kind then name.
type rendered struct {
	objs []manifest
}

func loadChart(t *testing.T) *chartv2.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart: %v", err)
	}
	return c
}

// render renders the chart as `helm template` would, with values given as
// YAML (as in a -f file), and decodes every object.
func render(t *testing.T, valuesYAML string) *rendered {
	t.Helper()
	return renderAs(t, releaseName, releaseNS, valuesYAML)
}

// renderAs renders the chart as release name in namespace ns.
func renderAs(t *testing.T, name, ns, valuesYAML string) *rendered {
	t.Helper()
	out, err := renderRawAs(t, name, ns, valuesYAML)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	r := &rendered{}
	names := make([]string, 0, len(out))
	for name := range out {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !strings.HasSuffix(name, ".yaml") {
			continue // NOTES.txt, _helpers.tpl
		}
		rd := utilyaml.NewYAMLReader(bufio.NewReader(strings.NewReader(out[name])))
		for {
			doc, err := rd.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: split: %v", name, err)
			}
			if isEmptyDoc(doc) {
				continue
			}
			r.objs = append(r.objs, decode(t, name, doc))
		}
	}
	return r
}

func renderRaw(t *testing.T, valuesYAML string) (map[string]string, error) {
	t.Helper()
	return renderRawAs(t, releaseName, releaseNS, valuesYAML)
}

func renderRawAs(t *testing.T, name, ns, valuesYAML string) (map[string]string, error) {
	t.Helper()
	c := loadChart(t)
	vals := map[string]any{}
	if err := yaml.Unmarshal([]byte(valuesYAML), &vals); err != nil {
		t.Fatalf("values: %v", err)
	}
	// ToRenderValues validates against values.schema.json, as helm install does.
	top, err := util.ToRenderValues(c, vals, common.ReleaseOptions{Name: name, Namespace: ns, IsInstall: true, Revision: 1}, nil)
	if err != nil {
		return nil, fmt.Errorf("values: %w", err)
	}
	return engine.Render(c, top)
}

func isEmptyDoc(doc []byte) bool {
	for _, line := range strings.Split(string(doc), "\n") {
		line = strings.TrimSpace(line)
		if line != "" && line != "---" && !strings.HasPrefix(line, "#") {
			return false
		}
	}
	return true
}

// decode decodes one document: built-in kinds strictly into their Go types,
// a ServiceMonitor (no Go type here) into unstructured.
func decode(t *testing.T, source string, doc []byte) manifest {
	t.Helper()
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		t.Fatalf("%s: %v\n%s", source, err, doc)
	}
	gvk := schema.FromAPIVersionAndKind(tm.APIVersion, tm.Kind)
	if gvk == serviceMonitorGVK {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("%s: %v", source, err)
		}
		return manifest{source: source, obj: u, gvk: gvk}
	}
	obj, got, err := strict.Decode(doc, nil, nil)
	if err != nil {
		t.Fatalf("%s: decode %s: %v\n%s", source, gvk, err, doc)
	}
	return manifest{source: source, obj: obj, gvk: *got}
}

func (r *rendered) kinds() []string {
	var ks []string
	for _, m := range r.objs {
		ks = append(ks, m.gvk.Kind)
	}
	sort.Strings(ks)
	return ks
}

func (r *rendered) ofKind(kind string) []manifest {
	var ms []manifest
	for _, m := range r.objs {
		if m.gvk.Kind == kind {
			ms = append(ms, m)
		}
	}
	return ms
}

// one returns the only object of a kind, as T.
func one[T runtime.Object](t *testing.T, r *rendered, kind string) T {
	t.Helper()
	ms := r.ofKind(kind)
	if len(ms) != 1 {
		t.Fatalf("want one %s, got %d (kinds: %v)", kind, len(ms), r.kinds())
	}
	o, ok := ms[0].obj.(T)
	if !ok {
		t.Fatalf("%s decoded as %T", kind, ms[0].obj)
	}
	return o
}

// clusterRoles are the rendered ClusterRoles by name.
func clusterRoles(r *rendered) map[string]*rbacv1.ClusterRole {
	out := map[string]*rbacv1.ClusterRole{}
	for _, m := range r.ofKind("ClusterRole") {
		cr := m.obj.(*rbacv1.ClusterRole)
		out[cr.Name] = cr
	}
	return out
}

// managerClusterRole is the manager's ClusterRole, the one not aggregated
// to the cluster's roles for users.
func managerClusterRole(t *testing.T, r *rendered) *rbacv1.ClusterRole {
	t.Helper()
	cr, ok := clusterRoles(r)[releaseName+"-manager"]
	if !ok {
		t.Fatalf("no ClusterRole %s-manager among %v", releaseName, r.kinds())
	}
	return cr
}

func managerContainer(t *testing.T, d *appsv1.Deployment) corev1.Container {
	t.Helper()
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == "manager" {
			return c
		}
	}
	t.Fatalf("no manager container in %v", d.Spec.Template.Spec.Containers)
	return corev1.Container{}
}

// assertRestricted checks the restricted Pod Security Standard on the pod
// and its containers.
func assertRestricted(t *testing.T, pod corev1.PodSpec) {
	t.Helper()
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("pod securityContext.runAsNonRoot not true: %+v", psc)
	}
	if psc == nil || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		t.Errorf("pod runs as root: %+v", psc)
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod seccomp profile not RuntimeDefault: %+v", psc)
	}
	if pod.HostNetwork || pod.HostPID || pod.HostIPC {
		t.Error("pod uses host namespaces")
	}
	for _, c := range append(slices.Clone(pod.InitContainers), pod.Containers...) {
		sc := c.SecurityContext
		if sc == nil {
			t.Errorf("container %s: no securityContext", c.Name)
			continue
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("container %s: allowPrivilegeEscalation not false", c.Name)
		}
		if sc.Privileged != nil && *sc.Privileged {
			t.Errorf("container %s: privileged", c.Name)
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Errorf("container %s: root filesystem not read-only", c.Name)
		}
		if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
			t.Errorf("container %s: capabilities %+v, want drop [ALL] and no add", c.Name, sc.Capabilities)
		}
		if sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			t.Errorf("container %s: runs as root", c.Name)
		}
	}
}

func TestLint(t *testing.T) {
	res := lint.RunAll(chartDir, nil, releaseNS)
	for _, m := range res.Messages {
		if m.Severity >= support.WarningSev {
			t.Errorf("lint: %s", m.Error())
		} else {
			t.Logf("lint: %s", m.Error())
		}
	}
	// The custom values of TestCustomValues, a namespace-scoped install and
	// everything of monitoring switched on lint cleanly too.
	for _, v := range []string{customValues,
		"rbac: {scope: namespace}\nwatchNamespaces: [team-a, team-b]",
		"metrics: {serviceMonitor: {enabled: true}, gatewayServiceMonitors: false}\ngrafanaDashboard: {enabled: true}",
	} {
		vals := map[string]any{}
		if err := yaml.Unmarshal([]byte(v), &vals); err != nil {
			t.Fatal(err)
		}
		for _, m := range lint.RunAll(chartDir, vals, releaseNS).Messages {
			if m.Severity >= support.WarningSev {
				t.Errorf("lint (%.40q…): %s", v, m.Error())
			}
		}
	}
}

func TestDefaultValues(t *testing.T) {
	c := loadChart(t)
	r := render(t, "")

	// ClusterRoles: the manager's and the two aggregated team roles.
	want := []string{"ClusterRole", "ClusterRole", "ClusterRole", "ClusterRoleBinding", "Deployment", "Role", "RoleBinding", "Service", "ServiceAccount"}
	if got := r.kinds(); !slices.Equal(got, want) {
		t.Fatalf("kinds = %v, want %v", got, want)
	}
	for _, m := range r.objs {
		acc := m.obj.(interface{ GetNamespace() string })
		switch m.gvk.Kind {
		case "ClusterRole", "ClusterRoleBinding":
			if ns := acc.GetNamespace(); ns != "" {
				t.Errorf("%s is cluster-scoped but has namespace %q", m.gvk.Kind, ns)
			}
		default:
			if ns := acc.GetNamespace(); ns != releaseNS {
				t.Errorf("%s in namespace %q, want %q", m.gvk.Kind, ns, releaseNS)
			}
		}
	}

	d := one[*appsv1.Deployment](t, r, "Deployment")
	mc := managerContainer(t, d)
	image := "ghcr.io/garraia/garra:" + c.Metadata.AppVersion
	if mc.Image != image {
		t.Errorf("image = %q, want %q", mc.Image, image)
	}
	if mc.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("pullPolicy = %q", mc.ImagePullPolicy)
	}
	if !slices.Equal(mc.Command, []string{"/manager"}) {
		t.Errorf("command = %v, want [/manager]", mc.Command)
	}
	wantArgs := []string{
		"--metrics-bind-address=:8080",
		"--health-probe-bind-address=:8081",
		"--leader-elect",
		"--garra-image=" + image,
		"--sandbox-image=ghcr.io/garraia/garra-sandbox:" + c.Metadata.AppVersion,
		"--zap-log-level=info",
	}
	if !slices.Equal(mc.Args, wantArgs) {
		t.Errorf("args = %q\nwant   %q", mc.Args, wantArgs)
	}
	if got := *d.Spec.Replicas; got != 1 {
		t.Errorf("replicas = %d", got)
	}
	assertRestricted(t, d.Spec.Template.Spec)

	// Probes on the health port, by name.
	ports := map[string]int32{}
	for _, p := range mc.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if ports["probes"] != 8081 || ports["metrics"] != 8080 {
		t.Errorf("ports = %v", ports)
	}
	for name, p := range map[string]*corev1.Probe{"/healthz": mc.LivenessProbe, "/readyz": mc.ReadinessProbe} {
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != name || p.HTTPGet.Port.String() != "probes" {
			t.Errorf("probe %s = %+v", name, p)
		}
	}
	if got := mc.Resources.Requests.Memory(); got.Cmp(resource.MustParse("64Mi")) != 0 {
		t.Errorf("memory request = %v", got)
	}
	if got := mc.Resources.Limits.Memory(); got.Cmp(resource.MustParse("256Mi")) != 0 {
		t.Errorf("memory limit = %v", got)
	}

	// Selector ⊆ pod labels; the metrics Service selects the pods.
	podLabels := d.Spec.Template.Labels
	for k, v := range d.Spec.Selector.MatchLabels {
		if podLabels[k] != v {
			t.Errorf("selector %s=%s not on the pod template (%v)", k, v, podLabels)
		}
	}
	svc := one[*corev1.Service](t, r, "Service")
	for k, v := range svc.Spec.Selector {
		if podLabels[k] != v {
			t.Errorf("service selector %s=%s not on the pod template", k, v)
		}
	}
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "metrics" || svc.Spec.Ports[0].Port != 8080 || svc.Spec.Ports[0].TargetPort.String() != "metrics" {
		t.Errorf("service ports = %+v", svc.Spec.Ports)
	}

	// The ServiceAccount is the one the pod runs as and the bindings name.
	sa := one[*corev1.ServiceAccount](t, r, "ServiceAccount")
	if d.Spec.Template.Spec.ServiceAccountName != sa.Name {
		t.Errorf("pod serviceAccountName %q, ServiceAccount %q", d.Spec.Template.Spec.ServiceAccountName, sa.Name)
	}
	if sa.AutomountServiceAccountToken != nil && !*sa.AutomountServiceAccountToken {
		t.Error("the manager needs its API token")
	}
	cr := managerClusterRole(t, r)
	crb := one[*rbacv1.ClusterRoleBinding](t, r, "ClusterRoleBinding")
	assertBinding(t, crb.RoleRef, crb.Subjects, "ClusterRole", cr.Name, sa)
	role := one[*rbacv1.Role](t, r, "Role")
	rb := one[*rbacv1.RoleBinding](t, r, "RoleBinding")
	assertBinding(t, rb.RoleRef, rb.Subjects, "Role", role.Name, sa)
	if role.Namespace != releaseNS || rb.Namespace != releaseNS {
		t.Errorf("leader election Role in %q, RoleBinding in %q", role.Namespace, rb.Namespace)
	}
	want0 := readRole(t, "leader_election_role.yaml")
	if !reflect.DeepEqual(role.Rules, want0) {
		t.Errorf("leader election rules = %+v\nwant %+v (config/rbac/leader_election_role.yaml)", role.Rules, want0)
	}
}

func assertBinding(t *testing.T, ref rbacv1.RoleRef, subjects []rbacv1.Subject, kind, name string, sa *corev1.ServiceAccount) {
	t.Helper()
	if ref.APIGroup != rbacv1.GroupName || ref.Kind != kind || ref.Name != name {
		t.Errorf("roleRef = %+v, want %s %s", ref, kind, name)
	}
	want := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}}
	if !reflect.DeepEqual(subjects, want) {
		t.Errorf("subjects = %+v, want %+v", subjects, want)
	}
}

const customValues = `
image:
  repository: registry.example.com/team/garra
  tag: v9.9.9
  pullPolicy: Always
garraImage: registry.example.com/team/gateway:v1
sandboxImage: registry.example.com/team/sandbox:v2
leaderElection:
  enabled: false
metrics:
  port: 9090
  serviceMonitor:
    enabled: true
    interval: 30s
    labels:
      release: prometheus
resources:
  requests:
    cpu: 100m
    memory: 128Mi
  limits:
    cpu: "1"
    memory: 512Mi
logLevel: debug
extraArgs: ["--zap-devel=false"]
`

func TestCustomValues(t *testing.T) {
	r := render(t, customValues)

	want := []string{"ClusterRole", "ClusterRole", "ClusterRole", "ClusterRoleBinding", "Deployment", "Service", "ServiceAccount", "ServiceMonitor"}
	if got := r.kinds(); !slices.Equal(got, want) {
		t.Fatalf("kinds = %v, want %v (no leader-election Role without leader election)", got, want)
	}
	d := one[*appsv1.Deployment](t, r, "Deployment")
	mc := managerContainer(t, d)
	if mc.Image != "registry.example.com/team/garra:v9.9.9" || mc.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("image = %q %q", mc.Image, mc.ImagePullPolicy)
	}
	wantArgs := []string{
		"--metrics-bind-address=:9090",
		"--health-probe-bind-address=:8081",
		"--garra-image=registry.example.com/team/gateway:v1",
		"--sandbox-image=registry.example.com/team/sandbox:v2",
		"--zap-log-level=debug",
		"--zap-devel=false",
	}
	if !slices.Equal(mc.Args, wantArgs) {
		t.Errorf("args = %q\nwant   %q", mc.Args, wantArgs)
	}
	wantRes := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
	}
	for _, list := range []struct{ got, want corev1.ResourceList }{{mc.Resources.Requests, wantRes.Requests}, {mc.Resources.Limits, wantRes.Limits}} {
		if len(list.got) != len(list.want) {
			t.Errorf("resources = %v, want %v", mc.Resources, wantRes)
		}
		for k, v := range list.want {
			if g := list.got[k]; g.Cmp(v) != 0 {
				t.Errorf("resource %s = %v, want %v", k, g.String(), v.String())
			}
		}
	}
	assertRestricted(t, d.Spec.Template.Spec)

	svc := one[*corev1.Service](t, r, "Service")
	if svc.Spec.Ports[0].Port != 9090 {
		t.Errorf("service port = %d", svc.Spec.Ports[0].Port)
	}
	sm := one[*unstructured.Unstructured](t, r, "ServiceMonitor")
	if sm.GetAPIVersion() != "monitoring.coreos.com/v1" || sm.GetNamespace() != releaseNS {
		t.Errorf("ServiceMonitor %s in %q", sm.GetAPIVersion(), sm.GetNamespace())
	}
	if sm.GetLabels()["release"] != "prometheus" {
		t.Errorf("ServiceMonitor labels = %v", sm.GetLabels())
	}
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if len(sel) == 0 {
		t.Error("ServiceMonitor selects nothing")
	}
	for k, v := range sel {
		if svc.Labels[k] != v {
			t.Errorf("ServiceMonitor selector %s=%s not on the metrics Service (%v)", k, v, svc.Labels)
		}
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 {
		t.Fatalf("endpoints = %v", eps)
	}
	ep := eps[0].(map[string]any)
	if ep["port"] != "metrics" || ep["path"] != "/metrics" || ep["interval"] != "30s" {
		t.Errorf("endpoint = %v", ep)
	}
}

func TestLeaderElectionNamespace(t *testing.T) {
	r := render(t, "leaderElection: {namespace: ops}")
	mc := managerContainer(t, one[*appsv1.Deployment](t, r, "Deployment"))
	if !slices.Contains(mc.Args, "--leader-elect") || !slices.Contains(mc.Args, "--leader-election-namespace=ops") {
		t.Errorf("args = %q", mc.Args)
	}
	role := one[*rbacv1.Role](t, r, "Role")
	rb := one[*rbacv1.RoleBinding](t, r, "RoleBinding")
	if role.Namespace != "ops" || rb.Namespace != "ops" {
		t.Errorf("Lease Role in %q, RoleBinding in %q, want ops", role.Namespace, rb.Namespace)
	}
	if rb.Subjects[0].Namespace != releaseNS {
		t.Errorf("subject namespace %q, want the release's", rb.Subjects[0].Namespace)
	}
}

func TestMetricsDisabled(t *testing.T) {
	r := render(t, "metrics: {enabled: false, serviceMonitor: {enabled: true}}")
	if n := len(r.ofKind("Service")) + len(r.ofKind("ServiceMonitor")); n != 0 {
		t.Errorf("metrics disabled, still %d Service/ServiceMonitor (kinds %v)", n, r.kinds())
	}
	mc := managerContainer(t, one[*appsv1.Deployment](t, r, "Deployment"))
	if mc.Args[0] != "--metrics-bind-address=0" {
		t.Errorf("args = %q", mc.Args)
	}
	for _, p := range mc.Ports {
		if p.Name == "metrics" {
			t.Error("metrics port still declared")
		}
	}
}

func TestNoRBACAndExistingServiceAccount(t *testing.T) {
	r := render(t, "rbac: {create: false}\nserviceAccount: {create: false, name: ops-sa}")
	want := []string{"Deployment", "Service"}
	if got := r.kinds(); !slices.Equal(got, want) {
		t.Errorf("kinds = %v, want %v", got, want)
	}
	if got := one[*appsv1.Deployment](t, r, "Deployment").Spec.Template.Spec.ServiceAccountName; got != "ops-sa" {
		t.Errorf("serviceAccountName = %q", got)
	}
	if _, err := renderRaw(t, "serviceAccount: {create: false}"); err == nil {
		t.Error("serviceAccount.create=false without a name rendered")
	}
}

func TestReplicasNeedLeaderElection(t *testing.T) {
	if _, err := renderRaw(t, "replicaCount: 2\nleaderElection: {enabled: false}"); err == nil || !strings.Contains(err.Error(), "leaderElection") {
		t.Errorf("2 replicas without leader election: err = %v", err)
	}
	r := render(t, "replicaCount: 2")
	if got := *one[*appsv1.Deployment](t, r, "Deployment").Spec.Replicas; got != 2 {
		t.Errorf("replicas = %d", got)
	}
}

// TestCRDIsConfigCopy: the chart's CRDs are config/crd/bases' byte for
// byte, and the only files under crds/.
func TestCRDIsConfigCopy(t *testing.T) {
	for _, crdFile := range crdFiles {
		want, err := os.ReadFile(filepath.Join(repoRoot, "config", "crd", "bases", crdFile))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(chartDir, "crds", crdFile))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("charts/garra-operator/crds/%s differs from config/crd/bases/%s: copy it again (cp config/crd/bases/%s charts/garra-operator/crds/)", crdFile, crdFile, crdFile)
		}
	}
	entries, err := os.ReadDir(filepath.Join(chartDir, "crds"))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(crdFiles) {
		t.Errorf("crds/ holds %d files, want only %v", len(entries), crdFiles)
	}
	crds := loadChart(t).CRDObjects()
	if len(crds) != len(crdFiles) {
		t.Fatalf("chart CRDs = %d, want %d", len(crds), len(crdFiles))
	}
	for _, c := range crds {
		obj, _, err := strict.Decode(c.File.Data, nil, nil)
		if err != nil {
			t.Fatalf("decode CRD: %v", err)
		}
		crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
		if !ok || crdFiles[crd.Spec.Names.Kind] == "" || crd.Name != crd.Spec.Names.Plural+".garra.garraia.io" {
			t.Errorf("CRD = %T %v", obj, crd)
		}
	}
}

// readRole decodes the rules of a Role or ClusterRole under config/rbac.
func readRole(t *testing.T, file string) []rbacv1.PolicyRule {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "config", "rbac", file))
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := strict.Decode(data, nil, nil)
	if err != nil {
		t.Fatalf("config/rbac/%s: %v", file, err)
	}
	switch o := obj.(type) {
	case *rbacv1.ClusterRole:
		return o.Rules
	case *rbacv1.Role:
		return o.Rules
	}
	t.Fatalf("config/rbac/%s is a %T", file, obj)
	return nil
}

// TestClusterRoleMatchesConfig: the chart's ClusterRole has exactly the
// rules controller-gen wrote to config/rbac/role.yaml.
func TestClusterRoleMatchesConfig(t *testing.T) {
	want := readRole(t, "role.yaml")
	got := managerClusterRole(t, render(t, "")).Rules
	if !reflect.DeepEqual(got, want) {
		t.Errorf("chart ClusterRole rules differ from config/rbac/role.yaml:\n got %+v\nwant %+v", got, want)
	}
}
