package controllers

// Benchmarks of the GarraServer controller on envtest (a real kube-apiserver
// and etcd): for a GarraServer with 1, 10, 50 and 100 orchestrators, the time
// from create to every child present (and status.observedGeneration caught
// up), the API writes the manager made to get there, and the writes of a
// resync once converged (expected 0).
//
//	go test -run '^$' -bench BenchmarkReconcile -benchtime=1x ./controllers/
//
// The binaries are found as the suite finds them ($KUBEBUILDER_ASSETS, else
// `hack/envtest.sh --check`); without them the benchmark is skipped. The
// control plane is stopped when the benchmark returns, and a reaper process
// (startReaper, suite_test.go) kills it if the binary dies first.
//
// Metrics: ms/converge, writes/converge (every mutating request of the
// manager in the namespace, events included), reconciles/converge,
// writes/resync (writes per reconcile triggered after convergence).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// benchConvergeTimeout bounds one create-to-converged wait.
const benchConvergeTimeout = 5 * time.Minute

// benchAPIMaxOrchestrators is the CRD's spec.orchestrators maxItems. The
// benchmark installs a copy of the CRD with the cap raised to
// benchMaxOrchestrators so that the controller can be measured past it; the
// sub-benchmarks above the real cap are named "-overcap".
const (
	benchAPIMaxOrchestrators = 32
	benchMaxOrchestrators    = 128
)

// benchCRDs writes config/crd/bases into dir, spec.orchestrators' maxItems
// raised to benchMaxOrchestrators, and returns dir.
func benchCRDs(dir string) (string, error) {
	const file = "garra.garraia.io_garraservers.yaml"
	data, err := os.ReadFile(filepath.Join("..", "config", "crd", "bases", file))
	if err != nil {
		return "", err
	}
	// The orchestrators list is the only maxItems at this indentation.
	old := fmt.Sprintf("\n                maxItems: %d\n", benchAPIMaxOrchestrators)
	if strings.Count(string(data), old) != 1 {
		return "", fmt.Errorf("%s: spec.orchestrators maxItems: %d not found once; update benchCRDs", file, benchAPIMaxOrchestrators)
	}
	patched := strings.Replace(string(data), old, fmt.Sprintf("\n                maxItems: %d\n", benchMaxOrchestrators), 1)
	return dir, os.WriteFile(filepath.Join(dir, file), []byte(patched), 0o600)
}

// benchResyncs is how many reconciles are triggered once converged.
const benchResyncs = 3

func BenchmarkReconcile(b *testing.B) {
	crdDir, err := benchCRDs(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	admin, counter, done := benchEnv(b, crdDir)
	defer done()

	for _, n := range []int{1, 10, 32, 50, 100} {
		name := fmt.Sprintf("orchestrators=%d", n)
		if n > benchAPIMaxOrchestrators {
			name += "-overcap"
		}
		b.Run(name, func(b *testing.B) {
			var convergeMS, writesConv, reconcConv, writesResync float64
			for i := 0; i < b.N; i++ {
				r := benchOnce(b, admin, counter, n)
				convergeMS += r.converge.Seconds() * 1000
				writesConv += float64(r.writes)
				reconcConv += r.reconciles
				writesResync += float64(r.resyncWrites) / benchResyncs
				if i == 0 {
					b.Logf("n=%d: converged in %s, %d writes %v, %.0f reconciles; %d writes over %d resyncs",
						n, r.converge.Round(time.Millisecond), r.writes, r.byResource, r.reconciles, r.resyncWrites, benchResyncs)
				}
			}
			N := float64(b.N)
			b.ReportMetric(convergeMS/N, "ms/converge")
			b.ReportMetric(writesConv/N, "writes/converge")
			b.ReportMetric(reconcConv/N, "reconciles/converge")
			b.ReportMetric(writesResync/N, "writes/resync")
		})
	}
}

type benchResult struct {
	converge     time.Duration
	writes       int
	byResource   map[string]int
	reconciles   float64
	resyncWrites int
}

// benchOnce creates a GarraServer with n orchestrators in a namespace of its
// own, waits until it has converged, then triggers benchResyncs reconciles.
func benchOnce(b *testing.B, c client.Client, counter *writeCounter, n int) benchResult {
	b.Helper()
	ctx := context.Background()
	b.StopTimer()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchNamespace(b, c, "bench-")}}
	gs := benchServer(b, c, ns.Name)
	for i := range n {
		gs.Spec.Orchestrators = append(gs.Spec.Orchestrators, garrav1alpha1.OrchestratorSpec{
			Name:                 fmt.Sprintf("o%03d", i),
			OrchestratorSettings: garrav1alpha1.OrchestratorSettings{Tools: []garrav1alpha1.Tool{"status", "agent"}},
		})
	}
	want := 5 + 7*n // gateway: Secret, ConfigMap, PVC, Deployment, Service; per orchestrator 7 (its two Secrets)
	recBefore := benchReconciles()

	b.StartTimer()
	start := time.Now()
	if err := c.Create(ctx, gs); err != nil {
		b.Fatal(err)
	}
	deadline := start.Add(benchConvergeTimeout)
	for {
		got, err := benchChildren(ctx, c, ns.Name)
		if err != nil {
			b.Fatal(err)
		}
		if got >= want {
			cur := &garrav1alpha1.GarraServer{}
			if err := c.Get(ctx, client.ObjectKeyFromObject(gs), cur); err != nil {
				b.Fatal(err)
			}
			if cur.Status.ObservedGeneration == cur.Generation {
				break
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("n=%d: %d of %d children after %s", n, got, want, benchConvergeTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	res := benchResult{converge: time.Since(start)}
	b.StopTimer()

	// Let the tail of the convergence (status, events) land before counting.
	benchQuiet(counter, ns.Name, 2*time.Second)
	w := counter.in(ns.Name)
	res.writes = len(w)
	res.byResource = benchByResource(w)
	res.reconciles = benchReconciles() - recBefore

	// Resyncs: an annotation on the GarraServer (no generation bump) and a
	// foreign label on a child each trigger a reconcile that finds
	// everything as desired.
	for i := range benchResyncs {
		before := benchReconciles()
		var err error
		if i%2 == 0 {
			cur := &garrav1alpha1.GarraServer{}
			if err = c.Get(ctx, client.ObjectKeyFromObject(gs), cur); err == nil {
				if cur.Annotations == nil {
					cur.Annotations = map[string]string{}
				}
				cur.Annotations["example.com/resync"] = fmt.Sprint(i)
				err = c.Update(ctx, cur)
			}
		} else {
			svc := &corev1.Service{}
			if err = c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "team-a-gateway"}, svc); err == nil {
				svc.Labels["example.com/resync"] = fmt.Sprint(i)
				err = c.Update(ctx, svc)
			}
		}
		if err != nil {
			b.Fatal(err)
		}
		until := time.Now().Add(30 * time.Second)
		for benchReconciles() <= before {
			if time.Now().After(until) {
				b.Fatalf("resync %d: no reconcile within 30s", i)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	benchQuiet(counter, ns.Name, 2*time.Second)
	res.resyncWrites = len(counter.in(ns.Name)) - res.writes
	if res.resyncWrites > 0 {
		b.Logf("n=%d: resync writes: %v", n, counter.in(ns.Name)[res.writes:])
	}
	return res
}

// benchChildren counts team-a's children in ns, every kind of the table.
func benchChildren(ctx context.Context, c client.Client, ns string) (int, error) {
	sel := client.MatchingLabels{LabelInstance: "team-a", LabelName: AppName}
	total := 0
	for _, list := range []client.ObjectList{
		&corev1.SecretList{}, &corev1.ConfigMapList{}, &corev1.PersistentVolumeClaimList{},
		&appsv1.DeploymentList{}, &corev1.ServiceList{}, &corev1.ServiceAccountList{},
		&networkingv1.NetworkPolicyList{},
	} {
		if err := c.List(ctx, list, client.InNamespace(ns), sel); err != nil {
			return 0, err
		}
		objs, err := objectsOfAny(list)
		if err != nil {
			return 0, err
		}
		total += len(objs)
	}
	return total, nil
}

// benchQuiet waits until no write happened in ns for d (at most a minute).
func benchQuiet(w *writeCounter, ns string, d time.Duration) {
	last, since, end := len(w.in(ns)), time.Now(), time.Now().Add(time.Minute)
	for time.Since(since) < d && time.Now().Before(end) {
		time.Sleep(50 * time.Millisecond)
		if n := len(w.in(ns)); n != last {
			last, since = n, time.Now()
		}
	}
}

// benchByResource counts writes by "METHOD resource".
func benchByResource(writes []string) map[string]int {
	out := map[string]int{}
	for _, w := range writes {
		method, path, _ := strings.Cut(w, " ")
		parts := strings.Split(path, "/")
		res := path
		for i, p := range parts {
			if p == "namespaces" && i+2 < len(parts) {
				res = parts[i+2]
				if len(parts) > i+4 {
					res += "/" + parts[len(parts)-1]
				}
				break
			}
		}
		out[method+" "+res]++
	}
	return out
}

// benchReconciles is the controller's reconcile count so far.
func benchReconciles() float64 {
	n, _ := reconcileCount()
	return n
}

// reconcileCount reads controller_runtime_reconcile_total for this
// controller from the manager's metrics registry.
func reconcileCount() (float64, error) {
	families, err := ctrlmetrics.Registry.(prometheus.Gatherer).Gather()
	if err != nil {
		return 0, err
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == ControllerName {
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total, nil
}

// benchServer is GarraServer team-a of namespace ns, not yet created,
// with the LLM key Secret it names created.
func benchServer(b *testing.B, c client.Client, ns string) *garrav1alpha1.GarraServer {
	b.Helper()
	if err := c.Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "llm-keys", Namespace: ns},
		StringData: map[string]string{"openrouter": "sk-or-bench"},
	}); err != nil {
		b.Fatal(err)
	}
	return &garrav1alpha1.GarraServer{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: ns},
		Spec: garrav1alpha1.GarraServerSpec{
			LLM: garrav1alpha1.LLMSpec{
				Provider:        garrav1alpha1.ProviderOpenRouter,
				Model:           "z-ai/glm-5.3-flash",
				APIKeySecretRef: &garrav1alpha1.SecretKeySelector{Name: "llm-keys", Key: "openrouter"},
			},
			Gateway: garrav1alpha1.GatewaySpec{AllowAsk: true, AllowAgent: true},
		},
	}
}

// benchEnv starts a control plane with the CRDs of crdDir and a manager
// whose every write counter counts, and returns the admin client, the
// counter and what stops both (the benchmark is skipped without the
// envtest binaries).
func benchEnv(b *testing.B, crdDir string) (client.Client, *writeCounter, func()) {
	b.Helper()
	assets, skip := benchAssets()
	if skip != "" {
		b.Skip(skip)
	}
	// GARRA_BENCH_LOG names a file for the manager's log (default: none).
	logTo := io.Discard
	if path := os.Getenv("GARRA_BENCH_LOG"); path != "" {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = f.Close() })
		logTo = f
	}
	logf.SetLogger(zap.New(zap.WriteTo(logTo)))
	env := &envtest.Environment{
		CRDDirectoryPaths:       []string{crdDir},
		ErrorIfCRDPathMissing:   true,
		BinaryAssetsDirectory:   assets,
		ControlPlaneStopTimeout: 90 * time.Second,
	}
	// envtest's default Service range (a /24) holds 254 Services; a
	// thousand sandboxes need more.
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.0.0.0/16")
	cfg, err := env.Start()
	reap := startReaper(assets)
	stopEnv := func() {
		start := time.Now()
		if err := env.Stop(); err != nil {
			b.Errorf("stopping the control plane: %v", err)
		}
		reap.stop()
		b.Logf("control plane stopped in %s", time.Since(start).Round(time.Millisecond))
	}
	if err != nil {
		stopEnv()
		b.Fatalf("starting the control plane: %v", err)
	}
	admin, err := client.New(cfg, client.Options{Scheme: testScheme})
	if err != nil {
		stopEnv()
		b.Fatal(err)
	}
	counter := &writeCounter{}
	mgrCfg := rest.CopyConfig(cfg)
	mgrCfg.Wrap(counter.wrap)
	// The API server's client-side throttling would be what is measured.
	mgrCfg.QPS, mgrCfg.Burst = -1, -1
	stopMgr, err := benchManager(mgrCfg)
	if err != nil {
		stopEnv()
		b.Fatal(err)
	}
	return admin, counter, func() { stopMgr(); stopEnv() }
}

// benchManager starts a manager as cmd/manager wires it and returns its stop.
func benchManager(cfg *rest.Config) (func(), error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testScheme,
		Cache:                  CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, err
	}
	// No gateway runs here to be asked: the benchmark measures the
	// reconcile, not DNS timeouts.
	if err := Setup(mgr, Images{Garra: "garra:bench", Sandbox: "garra-sandbox:bench"}, WithGatewayProbe(nil, nil)); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
	defer syncCancel()
	if !mgr.GetCache().WaitForCacheSync(syncCtx) {
		cancel()
		<-done
		return nil, errors.New("manager cache did not sync within a minute")
	}
	return func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
	}, nil
}

// benchAssets finds the envtest binaries, or says why the benchmark skips.
// Unlike the suite it never fails: a benchmark run without them is a skip.
func benchAssets() (dir, skip string) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, ""
	}
	script, err := filepath.Abs(filepath.Join("..", "hack", "envtest.sh"))
	if err != nil {
		return "", err.Error()
	}
	out, err := exec.Command(script, "--check").Output()
	if err != nil {
		return "", fmt.Sprintf("envtest binaries unavailable (set KUBEBUILDER_ASSETS or run `make envtest-assets`): %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], ""
}
