// Package readme runs the README's Kubernetes blocks (test/readmeblocks:
// kubectl, kubernetes, garraserver, columns) against a real kube-apiserver
// with the CRDs installed and the operator's controllers running, using the
// kubectl that comes with the envtest binaries. There are no nodes: a
// loopback double answers for the gateways, as a gateway that runs the
// rendered config and reaches every sandbox would.
package readme

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/yaml"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/controllers"
	"github.com/garraia/garra/internal/sandboxz"
	"github.com/garraia/garra/test/kubetest"
	"github.com/garraia/garra/test/readmeblocks"
	"github.com/garraia/garra/test/testlog"
)

const repoRoot = "../.."

// cluster is the README reader's cluster: an API server, the operator,
// a kubeconfig and a kubectl.
type cluster struct {
	c          client.Client
	kubeconfig string
	path       string // PATH with the envtest kubectl first
	home       string
}

func startCluster(t *testing.T) *cluster {
	t.Helper()
	assets := kubetest.Assets(t)
	env := &envtest.Environment{
		CRDDirectoryPaths:       []string{filepath.Join(repoRoot, "config", "crd", "bases")},
		ErrorIfCRDPathMissing:   true,
		ControlPlaneStopTimeout: 90 * time.Second,
	}
	var logs testlog.Buffer
	ctrl.SetLogger(zap.New(zap.WriteTo(&logs)))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("operator log (last 8 KiB):\n%s", tail(logs.String(), 8<<10))
		}
	})
	cfg := kubetest.StartEnvironment(t, env)
	admin, err := env.AddUser(envtest.User{Name: "readme-admin", Groups: []string{"system:masters"}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := admin.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	cl := &cluster{kubeconfig: filepath.Join(t.TempDir(), "kubeconfig"), path: assets + ":" + os.Getenv("PATH"), home: t.TempDir()}
	if err := os.WriteFile(cl.kubeconfig, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	scheme := k8sruntime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(garrav1alpha1.AddToScheme(scheme))
	if cl.c, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	gw := httptest.NewServer(gatewayDouble(cl.c))
	t.Cleanup(gw.Close)
	url := func(path string) func(*garrav1alpha1.GarraServer) string {
		return func(gs *garrav1alpha1.GarraServer) string { return gw.URL + "/" + gs.Namespace + "/" + gs.Name + path }
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Cache: controllers.CacheOptions(),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		// Each test of this package starts a manager of its own.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := controllers.Setup(mgr, controllers.Images{Garra: "garra:readme", Sandbox: "garra-sandbox:readme"},
		controllers.WithGatewayProbe(controllers.HTTPGatewayProbe(gw.Client()), url("/readyz")),
		controllers.WithSandboxProbe(controllers.HTTPSandboxProbe(gw.Client()), url("/sandboxz"))); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	go cl.rollOut(ctx)
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return cl
}

// rollOut stands in for the Deployment controller and the kubelet there
// are none of: every Deployment's replicas become available.
func (cl *cluster) rollOut(ctx context.Context) {
	for ctx.Err() == nil {
		var list appsv1.DeploymentList
		if cl.c.List(ctx, &list) == nil {
			for i := range list.Items {
				d := &list.Items[i]
				n := int32(1)
				if d.Spec.Replicas != nil {
					n = *d.Spec.Replicas
				}
				if d.Status.AvailableReplicas == n && d.Status.ObservedGeneration == d.Generation {
					continue
				}
				d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n,
					ReadyReplicas: n, AvailableReplicas: n, Conditions: []appsv1.DeploymentCondition{
						{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}}}
				_ = cl.c.Status().Update(ctx, d)
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// gatewayDouble answers /readyz and /sandboxz as a gateway that runs the
// config the operator rendered and reaches each orchestrator's sandbox.
func gatewayDouble(c client.Client) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
		if len(parts) != 3 {
			http.NotFound(w, r)
			return
		}
		ns, name := parts[0], parts[1]
		cm := &corev1.ConfigMap{}
		gs := &garrav1alpha1.GarraServer{}
		if c.Get(r.Context(), types.NamespacedName{Namespace: ns, Name: name + "-gateway"}, cm) != nil ||
			c.Get(r.Context(), types.NamespacedName{Namespace: ns, Name: name}, gs) != nil {
			http.Error(w, "not up", http.StatusServiceUnavailable)
			return
		}
		hash := controllers.ConfigHash(cm.Data[controllers.ConfigKey])
		switch parts[2] {
		case "readyz":
			w.Header().Set(controllers.HeaderConfigHash, hash)
			w.WriteHeader(http.StatusOK)
		case "sandboxz":
			rep := sandboxz.Report{ConfigHash: hash, Sandboxes: map[string]sandboxz.Verdict{}}
			for _, o := range gs.Spec.Orchestrators {
				rep.Sandboxes[o.Name] = sandboxz.Verdict{Verified: true, Message: "listed 9 tools", Tools: 9, CheckedAt: time.Now()}
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(rep)
		default:
			http.NotFound(w, r)
		}
	})
}

// sh runs a script as the README reader would, from the checkout, with
// this cluster's kubectl.
func (cl *cluster) sh(script string, stdin []byte) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-e", "-c", script)
	cmd.Dir = repoRoot
	cmd.Env = []string{"PATH=" + cl.path, "HOME=" + cl.home, "KUBECONFIG=" + cl.kubeconfig}
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("%w\n%s\nstdout:\n%s\nstderr:\n%s", err, script, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// namespaces creates every namespace the objects of a YAML stream name.
func (cl *cluster) namespaces(t *testing.T, stream string) {
	t.Helper()
	for _, m := range regexp.MustCompile(`(?m)namespace: *([a-z0-9-]+)`).FindAllStringSubmatch(stream, -1) {
		ns := &corev1.Namespace{}
		ns.Name = m[1]
		if err := cl.c.Create(context.Background(), ns); err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatal(err)
		}
	}
}

// dryRun applies objects with a server-side dry run: the API server
// validates them against the CRDs' schemas and its own rules.
func (cl *cluster) dryRun(t *testing.T, objects string) error {
	t.Helper()
	cl.namespaces(t, objects)
	_, err := cl.sh("kubectl apply --dry-run=server -f -", []byte(objects))
	return err
}

// kubeRunners are the runners of this package.
var kubeRunners = map[string]func(*cluster, *testing.T, readmeblocks.Block) error{
	"kubectl":     (*cluster).runKubectl,
	"kubernetes":  (*cluster).runKubernetes,
	"garraserver": (*cluster).runGarraServer,
	"columns":     (*cluster).runColumns,
}

func readmeBlocks(t *testing.T) []readmeblocks.Block {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return readmeblocks.Parse(string(raw))
}

// The README's Kubernetes blocks, in README order, on one cluster: the
// operator quick start creates what the sample needs and the operator
// makes its gateway; the other blocks then run against that GarraServer.
func TestReadmeKubernetesBlocks(t *testing.T) {
	for name, r := range readmeblocks.Runners {
		if strings.HasPrefix(r.By, "test/readme ") && kubeRunners[name] == nil {
			t.Errorf("runner %s says test/readme runs it, and nothing here does", name)
		}
	}
	cl := startCluster(t)
	ran := 0
	for _, b := range readmeBlocks(t) {
		run, ok := kubeRunners[b.Runner]
		if !ok {
			continue
		}
		ran++
		if err := run(cl, t, b); err != nil {
			t.Errorf("%s: %v", b.Where(), err)
		}
	}
	if ran < 10 {
		t.Fatalf("only %d blocks ran", ran)
	}
	t.Logf("%d README blocks ran", ran)
}

var sampleApply = regexp.MustCompile(`kubectl apply -f (\S+\.yaml)`)

// kubectl: the block as written; after one that applies a GarraServer
// file, the operator must have made its gateway without finding anything
// wrong with it.
func (cl *cluster) runKubectl(t *testing.T, b readmeblocks.Block) error {
	t.Helper()
	out, err := cl.sh(b.Body, nil)
	if err != nil {
		return err
	}
	t.Logf("%s:\n%s", b.Where(), out)
	m := sampleApply.FindStringSubmatch(b.Body)
	if m == nil {
		return nil
	}
	path := m[1]
	if !filepath.IsAbs(path) {
		path = filepath.Join(repoRoot, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var obj struct {
		Kind     string
		Metadata struct{ Name string }
	}
	if err := yaml.Unmarshal(data, &obj); err != nil || obj.Kind != "GarraServer" {
		return err
	}
	return cl.gatewayMade(obj.Metadata.Name)
}

// gatewayMade waits for the operator to create the gateway Deployment of
// GarraServer name in default and write its status, and fails on a
// condition saying the spec is wrong or a Secret it names is missing.
func (cl *cluster) gatewayMade(name string) error {
	ctx := context.Background()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		gs := &garrav1alpha1.GarraServer{}
		if err := cl.c.Get(ctx, types.NamespacedName{Namespace: "default", Name: name}, gs); err != nil {
			return err
		}
		for _, c := range gs.Status.Conditions {
			switch c.Reason {
			case garrav1alpha1.ReasonInvalidSpec, garrav1alpha1.ReasonSecretMissing, garrav1alpha1.ReasonApplyFailed:
				return fmt.Errorf("GarraServer %s: condition %s=%s %s: %s", name, c.Type, c.Status, c.Reason, c.Message)
			}
		}
		made := cl.c.Get(ctx, types.NamespacedName{Namespace: "default", Name: name + "-gateway"}, &appsv1.Deployment{}) == nil
		if made && gs.Status.ObservedGeneration == gs.Generation && len(gs.Status.Conditions) > 0 {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("no Deployment %s-gateway and status after 60 s", name)
}

// kubernetes: whole objects, dry-run on the server.
func (cl *cluster) runKubernetes(t *testing.T, b readmeblocks.Block) error {
	t.Helper()
	return cl.dryRun(t, b.Body)
}

var pathStep = regexp.MustCompile(`^([A-Za-z]+)(?:\[(\d+)\])?$`)

// garraserver: the part is set into the sample GarraServer at the path
// the marker names ("." for the object itself), and that is dry-run.
func (cl *cluster) runGarraServer(t *testing.T, b readmeblocks.Block) error {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot, "config", "samples", "garra_v1alpha1_garraserver.yaml"))
	if err != nil {
		return err
	}
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		return err
	}
	var part map[string]any
	if err := yaml.Unmarshal([]byte(dedent(b.Body)), &part); err != nil {
		return fmt.Errorf("the part does not parse: %w", err)
	}
	at := obj
	if b.Argument != "." {
		for _, step := range strings.Split(b.Argument, ".") {
			m := pathStep.FindStringSubmatch(step)
			if m == nil {
				return fmt.Errorf("bad path step %q", step)
			}
			next, ok := at[m[1]]
			if !ok {
				next = map[string]any{}
				at[m[1]] = next
			}
			if m[2] != "" {
				i, _ := strconv.Atoi(m[2])
				list, ok := next.([]any)
				if !ok || i >= len(list) {
					return fmt.Errorf("the sample has no %s", b.Argument)
				}
				next = list[i]
			}
			if at, ok = next.(map[string]any); !ok {
				return fmt.Errorf("the sample's %s is not an object", b.Argument)
			}
		}
	}
	merge(at, part)
	out, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	return cl.dryRun(t, string(out))
}

// merge sets part's fields into into, object fields field by field.
func merge(into, part map[string]any) {
	for k, v := range part {
		if sub, ok := v.(map[string]any); ok {
			if have, ok := into[k].(map[string]any); ok {
				merge(have, sub)
				continue
			}
		}
		into[k] = v
	}
}

// dedent removes the indentation the block's first line has.
func dedent(s string) string {
	first := strings.TrimLeft(s, "\n")
	n := len(first) - len(strings.TrimLeft(first, " "))
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		if len(line) >= n && strings.TrimSpace(line[:n]) == "" {
			line = line[n:]
		}
		b.WriteString(line + "\n")
	}
	return b.String()
}

// columns: the block's `kubectl get` header is the one kubectl prints for
// the kind the marker names, and each object a "kind/name, name" line lists
// exists.
func (cl *cluster) runColumns(t *testing.T, b readmeblocks.Block) error {
	t.Helper()
	var plural, get string
	switch b.Argument {
	case "GarraServer":
		plural, get = "garraservers", "kubectl get garraservers"
	case "Orchestrator":
		// One of its own, attached to nothing that exists: only the
		// columns matter.
		data, err := os.ReadFile(filepath.Join(repoRoot, "config", "samples", "garra_v1alpha1_orchestrator.yaml"))
		if err != nil {
			return err
		}
		cl.namespaces(t, string(data))
		if _, err := cl.sh("kubectl apply -f -", data); err != nil {
			return err
		}
		plural, get = "orchestrators", "kubectl get orchestrators -A"
	default:
		return fmt.Errorf("columns of %q: no such kind", b.Argument)
	}
	out, err := cl.sh(get, nil)
	if err != nil {
		return err
	}
	want := strings.Fields(firstLine(out))
	if b.Argument == "Orchestrator" && len(want) > 0 && want[0] == "NAMESPACE" {
		want = want[1:]
	}
	var shown []string
	for _, line := range strings.Split(b.Body, "\n") {
		if strings.HasPrefix(line, "NAME ") {
			shown = strings.Fields(line)
			break
		}
	}
	if strings.Join(shown, " ") != strings.Join(want, " ") {
		return fmt.Errorf("the README shows the columns %q; kubectl get %s prints %q", shown, plural, want)
	}
	listed := regexp.MustCompile(`^([a-z.]+)/(\S.*)$`)
	for _, line := range strings.Split(b.Body, "\n") {
		m := listed.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, entry := range strings.Split(m[2], ", ") {
			name := strings.Fields(entry)[0]
			if _, err := cl.sh("kubectl get "+m[1]+" "+name, nil); err != nil {
				return fmt.Errorf("the README lists %s/%s, which the operator did not make: %w", m[1], name, err)
			}
		}
	}
	return nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// make dev (hack/dev.sh) creates every Secret the sample GarraServer
// names, as the README's quick start does (TestReadmeKubernetesBlocks runs
// that one on a cluster; dev.sh's building and waiting are left to make
// dev itself).
func TestDevScriptCreatesWhatTheSampleNeeds(t *testing.T) {
	dev, err := os.ReadFile(filepath.Join(repoRoot, "hack", "dev.sh"))
	if err != nil {
		t.Fatal(err)
	}
	sample, err := os.ReadFile(filepath.Join(repoRoot, "config", "samples", "garra_v1alpha1_garraserver.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	created := map[string]bool{}
	for _, m := range regexp.MustCompile(`kubectl create secret generic (\S+)`).FindAllStringSubmatch(string(dev), -1) {
		created[m[1]] = true
	}
	refs := regexp.MustCompile(`SecretRef: *\{name: *([a-z0-9-]+)`).FindAllStringSubmatch(string(sample), -1)
	if len(refs) == 0 {
		t.Fatal("the sample names no Secret: the check would pass vacuously")
	}
	for _, m := range refs {
		if !created[m[1]] {
			t.Errorf("the sample names Secret %s, which hack/dev.sh does not create", m[1])
		}
	}
	if regexp.MustCompile(`serviceAccount:`).Match(sample) {
		t.Error("the sample has a serviceAccount orchestrator, whose ServiceAccount neither make dev nor the quick start creates")
	}
}

// Broken Kubernetes blocks must fail, or the test above proves nothing: a
// quick start that leaves out a Secret the GarraServer names, an unknown
// field in a GarraServer part, an object the API server refuses, columns
// kubectl does not print, an object the operator does not make.
func TestReadmeKubeRunnersCatchBrokenBlocks(t *testing.T) {
	cl := startCluster(t)
	sample := "apiVersion: garra.garraia.io/v1alpha1\nkind: GarraServer\nmetadata: {name: broken}\nspec:\n" +
		"  llm: {provider: openrouter, apiKeySecretRef: {name: llm-keys, key: openrouter}}\n" +
		"  orchestrators: [{name: n8n, tools: [status], tokenSecretRef: {name: n8n-token, key: token}}]\n"
	rel := filepath.Join(t.TempDir(), "broken.yaml")
	if err := os.WriteFile(rel, []byte(sample), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, b := range []readmeblocks.Block{
		{Runner: "kubectl", Body: "kubectl create secret generic llm-keys --from-literal=openrouter=sk-or-x\nkubectl apply -f " + rel + "\n"},
		{Runner: "garraserver", Argument: "spec.orchestrators[0]", Body: "      sandbox: {egress: sometimes}\n"},
		{Runner: "garraserver", Argument: "spec", Body: "  gateway: {noSuchField: 1}\n"},
		{Runner: "kubernetes", Body: "apiVersion: v1\nkind: Secret\nmetadata: {name: x, namespace: default}\ntype: Opaque\ndata: {k: not-base64!}\n"},
		{Runner: "columns", Argument: "GarraServer", Body: "NAME     READY   ENDPOINT   AGE\n"},
		{Runner: "columns", Argument: "GarraServer", Body: "NAME     READY   ORCHESTRATORS   VERIFIED   CONFIG   ENDPOINT   AGE\nconfigmap/team-z-gateway\n"},
		{Runner: "kubectl", Body: "kubectl wait garraserver/broken --for=condition=NoSuchCondition --timeout=2s\n"},
	} {
		b.Line, b.Heading = 1, "Broken"
		err := kubeRunners[b.Runner](cl, t, b)
		if err == nil {
			t.Errorf("%s %s block passed:\n%s", b.Runner, b.Argument, b.Body)
			continue
		}
		t.Logf("refused as it should be: %.300s", err)
	}
}
