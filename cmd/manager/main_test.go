package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/controllers"
	"github.com/garraia/garra/test/fakes/otlpdouble"
)

func TestParseFlags(t *testing.T) {
	defaults := options{metricsAddr: ":8080", probeAddr: ":8081", garraImage: "garra:latest", sandboxImage: "garra-sandbox:latest",
		serviceMonitors: true, leaderElectionID: LeaderElectionID}
	with := func(f func(*options)) options {
		o := defaults
		f(&o)
		return o
	}
	tests := []struct {
		name string
		args []string
		want options
		// wantErr is a substring of the error; "" means none.
		wantErr string
	}{
		{"defaults", nil, defaults, ""},
		{"everything", []string{"--metrics-bind-address=0", "--health-probe-bind-address=:9000", "--leader-elect",
			"--garra-image=reg/garra:1", "--sandbox-image=reg/sandbox:1", "--leader-election-namespace=ops", "--gateway-service-monitors=false",
			"--leader-election-id=team-a.garra.garraia.io", "--watch-namespace=team-a"},
			options{metricsAddr: "0", probeAddr: ":9000", leaderElect: true, garraImage: "reg/garra:1", sandboxImage: "reg/sandbox:1",
				leaderElectionNamespace: "ops", leaderElectionID: "team-a.garra.garraia.io", watchNamespaces: []string{"team-a"}}, ""},
		{"a list of namespaces", []string{"--watch-namespace= a, b,c"}, with(func(o *options) { o.watchNamespaces = []string{"a", "b", "c"} }), ""},
		{"an invalid namespace", []string{"--watch-namespace=a,Team_B"}, options{}, `--watch-namespace: namespace "Team_B"`},
		{"an empty entry", []string{"--watch-namespace=a,,b"}, options{}, `--watch-namespace: namespace ""`},
		{"a namespace twice", []string{"--watch-namespace=a,a"}, options{}, `namespace "a" given twice`},
		{"an empty lease name", []string{"--leader-election-id="}, options{}, "--leader-election-id"},
		{"stray argument", []string{"serve"}, options{}, "unexpected arguments"},
		{"unknown flag", []string{"--nope"}, options{}, "nope"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("manager", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			got, err := parseFlags(fs, tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.zap = options{}.zap
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("options = %+v\nwant      %+v", got, tc.want)
			}
		})
	}
}

// TestRunServesProbesAndReconciles runs the manager as main does against a
// real kube-apiserver (the envtest binaries, found as the controllers suite
// finds them): /healthz and /readyz answer and a GarraServer gets its
// gateway Deployment with the --garra-image default. The API server serves
// no ServiceMonitor, and the manager runs without. /metrics times each
// step of the passes it ran.
func TestRunServesProbesAndReconciles(t *testing.T) {
	cfg := startEnv(t)
	probe, metrics := freeAddr(t), freeAddr(t)
	o := options{metricsAddr: metrics, probeAddr: probe, garraImage: "garra:from-flag", sandboxImage: "sandbox:from-flag", serviceMonitors: true}
	startRun(t, o, cfg)

	for _, path := range []string{"/healthz", "/readyz"} {
		waitFor(t, path, func() error {
			resp, err := http.Get("http://" + probe + path)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("status %d", resp.StatusCode)
			}
			return nil
		})
	}

	c := newClient(t, cfg)
	createServer(t, c, "smoke", "smoke")
	waitFor(t, "gateway Deployment", func() error {
		d := &appsv1.Deployment{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "smoke", Name: "smoke-gateway"}, d); err != nil {
			return err
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "garra:from-flag" {
			return fmt.Errorf("image %q", img)
		}
		return nil
	})
	waitFor(t, "the passes' steps on /metrics", func() error {
		resp, err := http.Get("http://" + metrics + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		for _, step := range []string{"apply policy", "apply gateway", "write status"} {
			if !strings.Contains(string(body), controllers.MetricStepSeconds+`_count{step="`+step+`"}`) {
				return fmt.Errorf("no %s for step %q", controllers.MetricStepSeconds, step)
			}
		}
		return nil
	})
}

// envtestAssets is $KUBEBUILDER_ASSETS or what `hack/envtest.sh --check`
// prints (it never builds).
func envtestAssets(t *testing.T) string {
	t.Helper()
	if assets := os.Getenv("KUBEBUILDER_ASSETS"); assets != "" {
		return assets
	}
	script := filepath.Join("..", "..", "hack", "envtest.sh")
	if _, err := os.Stat(script); errors.Is(err, os.ErrNotExist) {
		t.Skip("KUBEBUILDER_ASSETS is unset and hack/envtest.sh is absent: no kube-apiserver to run against")
	}
	out, err := exec.Command(script, "--check").Output()
	if err != nil {
		t.Fatalf("envtest binaries are not built yet (%v): run `make envtest-suite` or set KUBEBUILDER_ASSETS", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// startEnv starts kube-apiserver and etcd with the GarraServer CRD and the
// CRDs of extraCRDDirs, stopped when the test ends.
func startEnv(t *testing.T, extraCRDDirs ...string) *rest.Config {
	t.Helper()
	_, cfg := startEnvironment(t, extraCRDDirs...)
	return cfg
}

func startEnvironment(t *testing.T, extraCRDDirs ...string) (*envtest.Environment, *rest.Config) {
	t.Helper()
	env := &envtest.Environment{
		CRDDirectoryPaths:       append([]string{filepath.Join("..", "..", "config", "crd", "bases")}, extraCRDDirs...),
		ErrorIfCRDPathMissing:   true,
		BinaryAssetsDirectory:   envtestAssets(t),
		ControlPlaneStopTimeout: 90 * time.Second,
	}
	cfg, err := env.Start()
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop control plane: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return env, cfg
}

// startRun runs the manager as main does until the test ends.
func startRun(t *testing.T, o options, cfg *rest.Config) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	o.skipNameValidation = true
	go func() { done <- run(ctx, o, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})
}

func newClient(t *testing.T, cfg *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// createServer creates namespace ns (if need be) and a GarraServer in it.
func createServer(t *testing.T, c client.Client, ns, name string) *garrav1alpha1.GarraServer {
	t.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	gs := &garrav1alpha1.GarraServer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       garrav1alpha1.GarraServerSpec{LLM: garrav1alpha1.LLMSpec{Provider: garrav1alpha1.ProviderOllama}},
	}
	if err := c.Create(ctx, gs); err != nil {
		t.Fatal(err)
	}
	return gs
}

// TestGatewayServiceMonitor: with the ServiceMonitor CRD installed, the
// manager applies one per gateway, server-side under its field owner,
// controlled by the GarraServer, scraping /metrics on the port named mcp
// of the gateway Service; a deleted one comes back.
func TestGatewayServiceMonitor(t *testing.T) {
	cfg := startEnv(t, filepath.Join("testdata", "crds"))
	o := options{metricsAddr: "0", probeAddr: "0", garraImage: "garra:x", sandboxImage: "sandbox:x", serviceMonitors: true}
	startRun(t, o, cfg)
	c := newClient(t, cfg)
	ctx := context.Background()
	gs := createServer(t, c, "mon", "team")

	key := client.ObjectKey{Namespace: "mon", Name: "team-gateway"}
	sm := &unstructured.Unstructured{}
	sm.SetGroupVersionKind(controllers.ServiceMonitorGVK)
	waitFor(t, "ServiceMonitor", func() error { return c.Get(ctx, key, sm) })

	if ref := metav1.GetControllerOf(sm); ref == nil || ref.UID != gs.UID || ref.Kind != "GarraServer" {
		t.Errorf("controller of the ServiceMonitor = %+v, want GarraServer %s", ref, gs.UID)
	}
	var appliers []string
	for _, mf := range sm.GetManagedFields() {
		if mf.Operation == metav1.ManagedFieldsOperationApply {
			appliers = append(appliers, mf.Manager)
		}
	}
	if !slices.Equal(appliers, []string{controllers.FieldOwner}) {
		t.Errorf("applied by %v, want only %s", appliers, controllers.FieldOwner)
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 {
		t.Fatalf("endpoints = %v", eps)
	}
	if ep := eps[0].(map[string]any); ep["port"] != controllers.PortName || ep["path"] != "/metrics" {
		t.Errorf("endpoint = %v", ep)
	}
	svc := &corev1.Service{}
	waitFor(t, "gateway Service", func() error { return c.Get(ctx, key, svc) })
	if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == controllers.PortName }) {
		t.Errorf("gateway Service has no port %s: %+v", controllers.PortName, svc.Spec.Ports)
	}
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if len(sel) == 0 {
		t.Fatal("the ServiceMonitor selects every Service")
	}
	for k, v := range sel {
		if svc.Labels[k] != v {
			t.Errorf("selector %s=%s is not on the gateway Service (%v)", k, v, svc.Labels)
		}
	}

	uid := sm.GetUID()
	if err := c.Delete(ctx, sm); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "ServiceMonitor re-created", func() error {
		again := &unstructured.Unstructured{}
		again.SetGroupVersionKind(controllers.ServiceMonitorGVK)
		if err := c.Get(ctx, key, again); err != nil {
			return err
		}
		if again.GetUID() == uid {
			return errors.New("still the deleted one")
		}
		return nil
	})
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitFor(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// namespacedRules are config/rbac/role.yaml's rules that a Role can hold:
// what the chart's rbac.scope namespace grants in each watched namespace.
func namespacedRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	var out []rbacv1.PolicyRule
	for _, r := range rbacRules(t, "role.yaml") {
		r.Resources = slices.DeleteFunc(r.Resources, func(res string) bool {
			return res == "clusterroles" || res == "clusterrolebindings" || res == "tokenreviews"
		})
		if len(r.Resources) > 0 {
			out = append(out, r)
		}
	}
	return out
}

// leaderElectionRules are config/rbac/leader_election_role.yaml's: what
// the manager needs for its own Lease.
func leaderElectionRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	return rbacRules(t, "leader_election_role.yaml")
}

// rbacRules are the rules of the Role or ClusterRole in config/rbac/name.
func rbacRules(t *testing.T, name string) []rbacv1.PolicyRule {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "config", "rbac", name))
	if err != nil {
		t.Fatal(err)
	}
	// A Role and a ClusterRole differ only in kind and namespace.
	var r rbacv1.ClusterRole
	if err := yaml.UnmarshalStrict(data, &r); err != nil {
		t.Fatal(err)
	}
	return r.Rules
}

// namespacedOperator is a user holding only a Role in ns with the
// namespaced rules and the leader election ones (its Lease is in ns too),
// as the chart's rbac.scope namespace makes it.
func namespacedOperator(t *testing.T, env *envtest.Environment, admin *rest.Config, c client.Client, ns string) *rest.Config {
	t.Helper()
	ctx := context.Background()
	user := "system:serviceaccount:" + ns + ":garra-operator"
	rules := append(namespacedRules(t), leaderElectionRules(t)...)
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "garra-operator-manager", Namespace: ns}, Rules: rules}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "garra-operator-manager", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, Name: user}},
	}
	for _, o := range []client.Object{role, rb} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	u, err := env.AddUser(envtest.User{Name: user}, admin)
	if err != nil {
		t.Fatal(err)
	}
	return u.Config()
}

// TestWatchNamespace: a manager with --watch-namespace=a that holds only a
// Role in a (and may not list anything cluster-wide) reconciles the
// GarraServer in a and leaves the one in b alone. Its ServiceAccount
// orchestrator needs a cluster-scoped TokenReview binding it cannot
// create: it creates none and says so in TokenReviewAccess, naming the
// field. A second manager for b, with the same Lease name in its own
// namespace, leads too and reconciles b: the two do not clash.
func TestWatchNamespace(t *testing.T) {
	env, admin := startEnvironment(t)
	c := newClient(t, admin)
	ctx := context.Background()
	for _, ns := range []string{"a", "b"} {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	opCfg := namespacedOperator(t, env, admin, c, "a")
	o := options{metricsAddr: "0", probeAddr: "0", garraImage: "garra:x", sandboxImage: "sandbox:x", serviceMonitors: true,
		leaderElect: true, leaderElectionNamespace: "a", leaderElectionID: LeaderElectionID, watchNamespaces: []string{"a"}}
	startRun(t, o, opCfg)

	inA := &garrav1alpha1.GarraServer{
		ObjectMeta: metav1.ObjectMeta{Name: "team", Namespace: "a"},
		Spec: garrav1alpha1.GarraServerSpec{
			LLM: garrav1alpha1.LLMSpec{Provider: garrav1alpha1.ProviderOllama},
			Orchestrators: []garrav1alpha1.OrchestratorSpec{
				{Name: "bot", OrchestratorSettings: garrav1alpha1.OrchestratorSettings{Tools: []garrav1alpha1.Tool{"status"}}},
				{Name: "robot", OrchestratorSettings: garrav1alpha1.OrchestratorSettings{
					Tools: []garrav1alpha1.Tool{"status"},
					Auth:  &garrav1alpha1.OrchestratorAuth{ServiceAccount: &garrav1alpha1.ServiceAccountAuth{Name: "robot"}},
				}},
			},
		},
	}
	if err := c.Create(ctx, inA); err != nil {
		t.Fatal(err)
	}
	inB := createServer(t, c, "b", "team")

	waitFor(t, "gateway Deployment in a", func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: "a", Name: "team-gateway"}, &appsv1.Deployment{})
	})
	var cond *metav1.Condition
	waitFor(t, "TokenReviewAccess condition", func() error {
		gs := &garrav1alpha1.GarraServer{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(inA), gs); err != nil {
			return err
		}
		if cond = meta.FindStatusCondition(gs.Status.Conditions, garrav1alpha1.ConditionTokenReviewAccess); cond == nil {
			return fmt.Errorf("conditions %v", gs.Status.Conditions)
		}
		if slices.Contains(gs.Finalizers, controllers.TokenReviewFinalizer) {
			return fmt.Errorf("finalizer %s set", controllers.TokenReviewFinalizer)
		}
		return nil
	})
	if cond.Status != metav1.ConditionUnknown || cond.Reason != garrav1alpha1.ReasonClusterBindingExternal {
		t.Errorf("TokenReviewAccess = %s %s, want Unknown %s", cond.Status, cond.Reason, garrav1alpha1.ReasonClusterBindingExternal)
	}
	for _, want := range []string{"spec.orchestrators[1].auth.serviceAccount (robot)", "ServiceAccount a/team-gateway", "tokenreviews"} {
		if !strings.Contains(cond.Message, want) {
			t.Errorf("message %q lacks %q", cond.Message, want)
		}
	}
	var crbs rbacv1.ClusterRoleBindingList
	if err := c.List(ctx, &crbs, client.MatchingLabels{controllers.LabelNamespace: "a"}); err != nil {
		t.Fatal(err)
	}
	if len(crbs.Items) != 0 {
		t.Errorf("ClusterRoleBindings made for a: %v", crbs.Items)
	}

	// b: untouched while only a is watched.
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		err := c.Get(ctx, client.ObjectKey{Namespace: "b", Name: "team-gateway"}, &appsv1.Deployment{})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("gateway Deployment in b: err = %v, want NotFound", err)
		}
		gs := &garrav1alpha1.GarraServer{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(inB), gs); err != nil {
			t.Fatal(err)
		}
		if len(gs.Status.Conditions) != 0 {
			t.Fatalf("GarraServer in b has status %v", gs.Status.Conditions)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// A second namespace-scoped manager, for b, same Lease name in b.
	opB := namespacedOperator(t, env, admin, c, "b")
	oB := o
	oB.leaderElectionNamespace, oB.watchNamespaces = "b", []string{"b"}
	startRun(t, oB, opB)
	waitFor(t, "gateway Deployment in b", func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: "b", Name: "team-gateway"}, &appsv1.Deployment{})
	})
	for _, ns := range []string{"a", "b"} {
		l := &coordinationv1.Lease{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: LeaderElectionID}, l); err != nil {
			t.Errorf("Lease in %s: %v", ns, err)
			continue
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" {
			t.Errorf("Lease in %s has no holder", ns)
		}
	}
}

// TestRunExportsReconcileSpans: with the standard OTLP variable set, each
// reconcile pass reaches the collector as one trace, a root span for the
// pass and a child per step.
func TestRunExportsReconcileSpans(t *testing.T) {
	otlp := otlpdouble.New(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", otlp.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "100") // ms: export soon, not after 5 s
	cfg := startEnv(t)
	startRun(t, options{metricsAddr: "0", probeAddr: "0", garraImage: "garra:t", sandboxImage: "sandbox:t"}, cfg)
	createServer(t, newClient(t, cfg), "traced", "traced")

	var root otlpdouble.Span
	var steps []string
	waitFor(t, "a traced reconcile pass that applied the gateway", func() error {
		spans := otlp.Spans()
		for _, s := range spans {
			if s.GetName() != controllers.SpanReconcile || s.Attr("k8s.namespace.name") != "traced" || s.Attr(string(controllers.AttrOutcome)) != "ok" {
				continue
			}
			root, steps = s, nil
			for _, c := range spans {
				if c.ParentID() == s.SpanID() && c.TraceID() == s.TraceID() {
					steps = append(steps, c.GetName())
				}
			}
			if slices.Contains(steps, "apply gateway") && slices.Contains(steps, "write status") {
				return nil
			}
		}
		return fmt.Errorf("%d spans, none a finished pass over traced/traced", len(spans))
	})
	if root.ParentID() != "" && strings.Trim(root.ParentID(), "0") != "" {
		t.Errorf("the pass's span has parent %s; want a root", root.ParentID())
	}
	if root.Service != TracingServiceName {
		t.Errorf("service.name = %q, want %q", root.Service, TracingServiceName)
	}
	if got := root.Attr(string(controllers.AttrGarraServer)); got != "traced" {
		t.Errorf("%s = %q, want traced", controllers.AttrGarraServer, got)
	}
	if errs := otlp.Errors(); len(errs) > 0 {
		t.Errorf("the collector refused requests: %q", errs)
	}
}
