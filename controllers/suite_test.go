package controllers

// The envtest suite: a real kube-apiserver and etcd (built by
// hack/envtest.sh), the CRD from config/crd/bases, the manager running as a
// user that holds only config/rbac/role.yaml, and Ginkgo specs in
// garraserver_envtest_test.go.
//
// Where the binaries come from: $KUBEBUILDER_ASSETS, else the directory
// `hack/envtest.sh --check` prints (it never builds). The suite skips only
// when KUBEBUILDER_ASSETS is unset AND hack/envtest.sh is absent; when the
// script is there but has not built yet, it fails and says to run
// `make envtest-suite`.
//
// The control plane is stopped on every exit path: DeferCleanup on success
// and on failure, Ginkgo's interrupt handler on SIGINT/SIGTERM, a suite
// timeout shorter than `go test -timeout` (so Ginkgo, not the testing
// package's panic, ends a slow run), and, for SIGKILL or a crash, a reaper
// process that outlives the test binary and kills kube-apiserver and etcd
// once the binary is gone.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/sandboxz"
)

// operatorUser is who the manager runs as in the suite.
const operatorUser = "system:serviceaccount:garra-system:garra-operator"

var (
	testScheme = k8sruntime.NewScheme()
	testEnv    *envtest.Environment
	// k8sClient is the test's own (admin) client; its requests are not counted.
	k8sClient client.Client
	// operatorCfg is the manager's config: the RBAC-limited user, with
	// every request counted by writes.
	operatorCfg *rest.Config
	writes      = &writeCounter{}
	mgrRun      *managerRun
	// testImages are the manager's --garra-image and --sandbox-image.
	testImages = [2]string{"garra:test", "garra-sandbox:test"}
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(testScheme))
	utilruntime.Must(garrav1alpha1.AddToScheme(testScheme))
}

// TestEnvtest runs the Ginkgo suite on a real API server.
func TestEnvtest(t *testing.T) {
	assets, skip := envtestAssets(t)
	if skip != "" {
		t.Skip(skip)
	}
	RegisterFailHandler(Fail)
	suiteCfg, reporterCfg := GinkgoConfiguration()
	if dl, ok := t.Deadline(); ok {
		// Leave time for the cleanup before `go test -timeout` panics.
		suiteCfg.Timeout = time.Until(dl) - 30*time.Second
	}
	assetsDir = assets
	RunSpecs(t, "GarraServer controller on envtest", suiteCfg, reporterCfg)
}

var assetsDir string

// envtestAssets finds the kube-apiserver and etcd directory, or says why
// the suite is skipped.
func envtestAssets(t *testing.T) (dir, skip string) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, ""
	}
	script, err := filepath.Abs(filepath.Join("..", "hack", "envtest.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(script); errors.Is(err, os.ErrNotExist) {
		return "", "envtest suite skipped: KUBEBUILDER_ASSETS is unset and hack/envtest.sh is absent, so there is no kube-apiserver/etcd to run against"
	}
	var stderr bytes.Buffer
	cmd := exec.Command(script, "--check")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("envtest binaries are not built yet (%v: %s): run `make envtest-suite`, which builds them with hack/envtest.sh (~20 min cold) and runs this suite, or set KUBEBUILDER_ASSETS", err, strings.TrimSpace(stderr.String()))
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], ""
}

var _ = BeforeSuite(func() {
	logf.SetLogger(zap.New(zap.WriteTo(GinkgoWriter), zap.UseDevMode(true)))

	By("starting kube-apiserver and etcd from " + assetsDir)
	testEnv = &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		BinaryAssetsDirectory: assetsDir,
		// kube-apiserver drains gracefully; on a loaded 2-core machine
		// that can take longer than envtest's default 20s.
		ControlPlaneStopTimeout: 90 * time.Second,
	}
	cfg, err := testEnv.Start()
	// Registered before checking err: a half-started plane is stopped too.
	reaper := startReaper(assetsDir)
	DeferCleanup(func() {
		By("stopping the control plane")
		start := time.Now()
		err := testEnv.Stop()
		GinkgoWriter.Printf("control plane stopped in %s\n", time.Since(start).Round(time.Millisecond))
		reaper.stop()
		Expect(err).NotTo(HaveOccurred())
	})
	Expect(err).NotTo(HaveOccurred())

	k8sClient, err = client.New(cfg, client.Options{Scheme: testScheme})
	Expect(err).NotTo(HaveOccurred())

	By("binding config/rbac/role.yaml to the operator's user")
	role := &rbacv1.ClusterRole{}
	data, err := os.ReadFile(filepath.Join("..", "config", "rbac", "role.yaml"))
	Expect(err).NotTo(HaveOccurred())
	Expect(yaml.UnmarshalStrict(data, role)).To(Succeed())
	Expect(k8sClient.Create(ctx, role)).To(Succeed())
	Expect(k8sClient.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "garra-operator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: operatorUser}},
	})).To(Succeed())
	user, err := testEnv.AddUser(envtest.User{Name: operatorUser}, cfg)
	Expect(err).NotTo(HaveOccurred())
	operatorCfg = user.Config()
	operatorCfg.Wrap(writes.wrap)

	gateways = newFakeGateways()
	DeferCleanup(gateways.srv.Close)
	mgrRun = startManager()
	DeferCleanup(func() { mgrRun.stop() })
})

// gateways answers every GarraServer's /readyz on loopback, in place of
// the gateway pods envtest does not run.
var gateways *fakeGateways

// fakeGateways reports, per namespace, the config hash a gateway runs and
// the problem of its last refused reload. A namespace not set reports no
// hash (a gateway that has loaded nothing yet).
type fakeGateways struct {
	srv  *httptest.Server
	mu   sync.Mutex
	byNS map[string][2]string
	// reports are the /sandboxz answers by namespace (absent: an empty
	// report); bearers the Authorization header each last got.
	reports map[string]sandboxz.Report
	bearers map[string]string
}

func newFakeGateways() *fakeGateways {
	f := &fakeGateways{byNS: map[string][2]string{}, reports: map[string]sandboxz.Report{}, bearers: map[string]string{}}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ns, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if rest == "sandboxz" {
			f.mu.Lock()
			rep := f.reports[ns]
			f.bearers[ns] = r.Header.Get("Authorization")
			f.mu.Unlock()
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(rep)
			return
		}
		if rest != "readyz" {
			http.NotFound(w, r)
			return
		}
		f.mu.Lock()
		v := f.byNS[ns]
		f.mu.Unlock()
		if v[0] != "" {
			w.Header().Set(HeaderConfigHash, v[0])
		}
		if v[1] != "" {
			w.Header().Set(HeaderConfigRejected, v[1])
		}
		w.WriteHeader(http.StatusOK)
	}))
	return f
}

func (f *fakeGateways) set(ns, hash, rejected string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.byNS[ns] = [2]string{hash, rejected}
}

func (f *fakeGateways) url(gs *garrav1alpha1.GarraServer) string {
	return f.srv.URL + "/" + gs.Namespace + "/readyz"
}

func (f *fakeGateways) setReport(ns string, rep sandboxz.Report) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reports[ns] = rep
}

func (f *fakeGateways) bearer(ns string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.bearers[ns]
}

func (f *fakeGateways) sandboxzURL(gs *garrav1alpha1.GarraServer) string {
	return f.srv.URL + "/" + gs.Namespace + "/sandboxz"
}

var ctx = context.Background()

// managerRun is one running manager.
type managerRun struct {
	cancel context.CancelFunc
	done   chan error
}

// startManager starts the manager as the operator's user, as cmd/manager
// does (same cache options, same reconciler wiring).
func startManager() *managerRun {
	GinkgoHelper()
	mgr, err := ctrl.NewManager(operatorCfg, ctrl.Options{
		Scheme:                 testScheme,
		Cache:                  CacheOptions(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// The suite restarts the manager in one process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	Expect(err).NotTo(HaveOccurred())
	Expect(Setup(mgr, Images{Garra: testImages[0], Sandbox: testImages[1]},
		WithGatewayProbe(HTTPGatewayProbe(gateways.srv.Client()), gateways.url),
		WithSandboxProbe(HTTPSandboxProbe(gateways.srv.Client()), gateways.sandboxzURL))).To(Succeed())
	mctx, cancel := context.WithCancel(context.Background())
	run := &managerRun{cancel: cancel, done: make(chan error, 1)}
	go func() {
		defer GinkgoRecover()
		run.done <- mgr.Start(mctx)
	}()
	return run
}

func (m *managerRun) stop() {
	m.cancel()
	select {
	case err := <-m.done:
		Expect(err).NotTo(HaveOccurred())
	case <-time.After(30 * time.Second):
		Fail("manager did not stop within 30s")
	}
}

// writeCounter counts the manager's mutating requests per namespace.
type writeCounter struct {
	mu   sync.Mutex
	byNS map[string][]string
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (w *writeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.mu.Lock()
			if w.byNS == nil {
				w.byNS = map[string][]string{}
			}
			ns := namespaceOf(req.URL.Path)
			w.byNS[ns] = append(w.byNS[ns], req.Method+" "+req.URL.Path)
			w.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

// objects returns the writes made so far to objects of namespace ns,
// leaving out events: the recorder patches an earlier event's count late,
// on its own schedule, which is no reconcile writing.
func (w *writeCounter) objects(ns string) []string {
	var out []string
	for _, x := range w.in(ns) {
		if !strings.Contains(x, "/events") {
			out = append(out, x)
		}
	}
	return out
}

// in returns the writes made so far in namespace ns.
func (w *writeCounter) in(ns string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.byNS[ns]...)
}

func namespaceOf(path string) string {
	parts := strings.Split(path, "/")
	for i, p := range parts {
		if p == "namespaces" && i+1 < len(parts) {
			return parts[i+1]
		}
	}
	return ""
}

// reaper is a process that outlives the test binary: when the binary is
// gone (however it died) it kills the kube-apiserver and etcd it started.
type reaper struct{ cmd *exec.Cmd }

const reaperScript = `parent=$1; shift
while kill -0 "$parent" 2>/dev/null; do sleep 1; done
ours() { case "$(readlink "/proc/$1/exe" 2>/dev/null)" in "$ASSETS"/*) return 0;; esac; return 1; }
for p in "$@"; do ours "$p" && kill "$p"; done
sleep 5
for p in "$@"; do ours "$p" && kill -9 "$p"; done
exit 0`

func startReaper(assets string) *reaper {
	if runtime.GOOS != "linux" {
		return &reaper{}
	}
	dir, err := filepath.EvalSymlinks(assets)
	if err != nil {
		dir = assets
	}
	pids := childrenIn(dir)
	if len(pids) == 0 {
		return &reaper{}
	}
	cmd := exec.Command("sh", append([]string{"-c", reaperScript, "reaper", strconv.Itoa(os.Getpid())}, pids...)...)
	cmd.Env = append(os.Environ(), "ASSETS="+dir)
	// Its own process group: a Ctrl-C to the test's group leaves it alive
	// to finish the job.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		GinkgoWriter.Printf("reaper not started: %v\n", err)
		return &reaper{}
	}
	return &reaper{cmd: cmd}
}

func (r *reaper) stop() {
	if r.cmd == nil {
		return
	}
	_ = r.cmd.Process.Kill()
	_ = r.cmd.Wait()
}

// childrenIn lists this process's children whose executable is in dir.
func childrenIn(dir string) []string {
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	var out []string
	for _, f := range tasks {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Split(bufio.ScanWords)
		for sc.Scan() {
			exe, err := os.Readlink("/proc/" + sc.Text() + "/exe")
			if err == nil && strings.HasPrefix(exe, dir+string(filepath.Separator)) {
				out = append(out, sc.Text())
			}
		}
	}
	return out
}

// must is for test set-up errors that are not the point of a spec.
func must(err error) {
	GinkgoHelper()
	Expect(err).NotTo(HaveOccurred(), fmt.Sprint(err))
}
