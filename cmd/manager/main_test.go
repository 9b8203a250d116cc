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
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/controllers"
)

func TestParseFlags(t *testing.T) {
	defaults := options{metricsAddr: ":8080", probeAddr: ":8081", garraImage: "garra:latest", sandboxImage: "garra:latest",
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
// no ServiceMonitor, and the manager runs without.
func TestRunServesProbesAndReconciles(t *testing.T) {
	cfg := startEnv(t)
	probe := freeAddr(t)
	o := options{metricsAddr: "0", probeAddr: probe, garraImage: "garra:from-flag", sandboxImage: "sandbox:from-flag", serviceMonitors: true}
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
	return cfg
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
