//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	"helm.sh/helm/v4/pkg/kube"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/remotecommand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// cluster is what the suite and the benchmarks share: clients of the
// cluster in KUBECONFIG and the parameters.
type cluster struct {
	p    params
	cfg  *rest.Config
	kube kubernetes.Interface
	c    client.Client
}

func newCluster(p params) (*cluster, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", p.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := garrav1alpha1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &cluster{p: p, cfg: cfg, kube: kc, c: c}, nil
}

// llmKey is the provider key the gateway gets from a Secret; the suite
// checks it reaches the double and never a sandbox pod.
const llmKey = "sk-e2e-llm-key-6a1f0c9e2b7d4358a1c0"

// prepare readies the cluster for GarraServers: the images loaded, the
// operator installed by its chart, the namespace with the LLM double and
// the key Secret, and the suite's storage class. record gets the time of
// the slow steps.
func (k *cluster) prepare(ctx context.Context, record func(string, time.Duration)) error {
	start := time.Now()
	if err := k.loadImages(ctx); err != nil {
		return err
	}
	record("images loaded", time.Since(start))

	start = time.Now()
	if err := k.installOperator(ctx); err != nil {
		return err
	}
	record("operator installed by the chart and ready", time.Since(start))

	ns := k.p.Namespace
	if err := k.ensureNamespace(ctx, ns); err != nil {
		return err
	}
	if err := k.ensureStaticClass(ctx); err != nil {
		return err
	}
	if err := k.deployDouble(ctx, ns); err != nil {
		return err
	}
	err := k.c.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "llm-keys", Namespace: ns},
		StringData: map[string]string{"openai": llmKey},
	})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Secret llm-keys: %w", err)
	}
	return nil
}

// cleanUp deletes every GarraServer of the namespace (while the operator
// still runs, so its finalizer-free children go with their owner), the
// namespace, the suite's volumes, and the operator's release.
func (k *cluster) cleanUp(ctx context.Context) error {
	var list garrav1alpha1.GarraServerList
	if err := k.c.List(ctx, &list, client.InNamespace(k.p.Namespace)); err != nil {
		return err
	}
	for i := range list.Items {
		if err := k.deleteAndWait(ctx, &list.Items[i]); err != nil {
			return err
		}
	}
	if err := k.deleteAndWait(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: k.p.Namespace}}); err != nil {
		return err
	}
	if err := k.removeVolumes(ctx, k.p.Namespace); err != nil {
		return err
	}
	return k.uninstallOperator()
}

// loadImages runs the loader on every tarball of the images directory.
func (k *cluster) loadImages(ctx context.Context) error {
	if k.p.Loader == "" {
		return nil
	}
	tars, err := filepath.Glob(filepath.Join(k.p.ImagesDir, "*.tar"))
	if err != nil || len(tars) == 0 {
		return fmt.Errorf("no image tarballs in %s (run hack/images.sh)", k.p.ImagesDir)
	}
	for _, t := range tars {
		line := strings.ReplaceAll(k.p.Loader, "{}", t)
		out, err := exec.CommandContext(ctx, "sh", "-c", line).CombinedOutput()
		if err != nil {
			return fmt.Errorf("load %s (%s): %w\n%s", t, line, err, out)
		}
	}
	return nil
}

// chartDir is the operator's chart in this repository.
func chartDir() string { return filepath.Join("..", "..", "charts", "garra-operator") }

const releaseName = "garra"

// helmConfig is a Helm action configuration for the operator's namespace.
func (k *cluster) helmConfig() (*action.Configuration, error) {
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = &k.p.Kubeconfig
	ns := k.p.OperatorNamespace
	flags.Namespace = &ns
	cfg := action.NewConfiguration()
	if err := cfg.Init(flags, ns, "secret"); err != nil {
		return nil, fmt.Errorf("helm init: %w", err)
	}
	return cfg, nil
}

// installOperator installs the chart (CRD included) with the images under
// test and waits for the manager to be ready.
func (k *cluster) installOperator(ctx context.Context) error {
	cfg, err := k.helmConfig()
	if err != nil {
		return err
	}
	// A release left by an interrupted run is replaced, not reused.
	if _, err := action.NewGet(cfg).Run(releaseName); err == nil {
		if err := k.uninstallOperator(); err != nil {
			return err
		}
	}
	ch, err := loader.Load(chartDir())
	if err != nil {
		return fmt.Errorf("load chart: %w", err)
	}
	repo, tag := k.p.GarraImage, ""
	if i := strings.LastIndex(k.p.GarraImage, ":"); i > strings.LastIndex(k.p.GarraImage, "/") {
		repo, tag = k.p.GarraImage[:i], k.p.GarraImage[i+1:]
	}
	in := action.NewInstall(cfg)
	in.ReleaseName = releaseName
	in.Namespace = k.p.OperatorNamespace
	in.CreateNamespace = true
	in.WaitStrategy = kube.StatusWatcherStrategy
	in.Timeout = 3 * time.Minute
	_, err = in.RunWithContext(ctx, ch, map[string]any{
		"image":          map[string]any{"repository": repo, "tag": tag, "pullPolicy": "IfNotPresent"},
		"sandboxImage":   k.p.SandboxImage,
		"leaderElection": map[string]any{"enabled": true},
		"logLevel":       "info",
	})
	if err != nil {
		return fmt.Errorf("helm install %s: %w", chartDir(), err)
	}
	return nil
}

func (k *cluster) uninstallOperator() error {
	cfg, err := k.helmConfig()
	if err != nil {
		return err
	}
	un := action.NewUninstall(cfg)
	un.WaitStrategy = kube.StatusWatcherStrategy
	un.Timeout = 2 * time.Minute
	if _, err := un.Run(releaseName); err != nil {
		return fmt.Errorf("helm uninstall: %w", err)
	}
	return nil
}

// ensureNamespace creates ns if absent.
func (k *cluster) ensureNamespace(ctx context.Context, ns string) error {
	err := k.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// doubleName is the LLM double's Deployment and Service.
const doubleName = "llmdouble"

// deployDouble runs the LLM double image in ns behind a Service on 8080.
func (k *cluster) deployDouble(ctx context.Context, ns string) error {
	return k.createWorkload(ctx, ns, doubleName, corev1.Container{
		Image: k.p.DoubleImage,
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: "/_double/healthz", Port: intstr.FromString("http")}}, PeriodSeconds: 1},
	}, nil, corev1.ServicePort{Name: "http", Port: 8080, TargetPort: intstr.FromString("http")})
}

// createWorkload runs c (named name) as one replica in ns, hardened as
// every helper of the suite (non-root 65532, no API token, read-only root,
// no capabilities), with volumes, behind a Service of one port; an
// existing one is kept.
func (k *cluster) createWorkload(ctx context.Context, ns, name string, c corev1.Container, volumes []corev1.Volume, port corev1.ServicePort) error {
	lbl := map[string]string{"app.kubernetes.io/name": name}
	one := int32(1)
	no, yes := false, true
	uid := int64(65532)
	c.Name = name
	c.ImagePullPolicy = corev1.PullIfNotPresent
	c.SecurityContext = &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: lbl},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: &no,
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid, FSGroup: &uid,
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{c},
					Volumes:    volumes,
				},
			},
		},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: lbl},
		Spec:       corev1.ServiceSpec{Selector: lbl, Ports: []corev1.ServicePort{port}},
	}
	for _, o := range []client.Object{d, svc} {
		if err := k.c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", o.GetObjectKind().GroupVersionKind().Kind, o.GetName(), err)
		}
	}
	return nil
}

// ensureStaticClass creates the no-provisioner StorageClass of the suite's
// hostPath volumes (Immediate, so a pre-bound volume binds at once).
func (k *cluster) ensureStaticClass(ctx context.Context) error {
	if k.p.StorageClass != "" {
		return nil
	}
	mode := storagev1.VolumeBindingImmediate
	policy := corev1.PersistentVolumeReclaimRetain
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: staticStorageClass},
		Provisioner:       "kubernetes.io/no-provisioner",
		VolumeBindingMode: &mode,
		ReclaimPolicy:     &policy,
	}
	if err := k.c.Create(ctx, sc); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// provideVolumes makes, for each claim name, a hostPath PersistentVolume
// pre-bound to ns/claim, in a fresh directory owned by the pods' uid
// (hostPath volumes ignore fsGroup). No-op with a provisioner.
func (k *cluster) provideVolumes(ctx context.Context, ns string, claims ...string) error {
	if k.p.StorageClass != "" {
		return nil
	}
	for _, claim := range claims {
		name := "garra-e2e-" + ns + "-" + claim
		dir := filepath.Join(k.p.HostPathDir, ns, claim)
		// A volume of an earlier run of the same name is replaced, its data
		// with it: every run starts with empty workspaces.
		old := &corev1.PersistentVolume{}
		if err := k.c.Get(ctx, client.ObjectKey{Name: name}, old); err == nil {
			if err := k.deleteAndWait(ctx, old); err != nil {
				return err
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
		if err := os.Chown(dir, 65532, 65532); err != nil {
			return err
		}
		typ := corev1.HostPathDirectory
		pv := &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"garra.garraia.io/e2e": "true"}},
			Spec: corev1.PersistentVolumeSpec{
				Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
				StorageClassName:              staticStorageClass,
				ClaimRef:                      &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: claim},
				PersistentVolumeSource:        corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: &typ}},
			},
		}
		if err := k.c.Create(ctx, pv); err != nil {
			return fmt.Errorf("create PersistentVolume %s: %w", name, err)
		}
	}
	return nil
}

// removeVolumes deletes the suite's PersistentVolumes of ns and their
// directories.
func (k *cluster) removeVolumes(ctx context.Context, ns string) error {
	if k.p.StorageClass != "" {
		return nil
	}
	var pvs corev1.PersistentVolumeList
	if err := k.c.List(ctx, &pvs, client.MatchingLabels{"garra.garraia.io/e2e": "true"}); err != nil {
		return err
	}
	for i := range pvs.Items {
		if cr := pvs.Items[i].Spec.ClaimRef; cr != nil && cr.Namespace == ns {
			if err := k.c.Delete(ctx, &pvs.Items[i]); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	return os.RemoveAll(filepath.Join(k.p.HostPathDir, ns))
}

// deleteAndWait deletes o and waits until it is gone.
func (k *cluster) deleteAndWait(ctx context.Context, o client.Object) error {
	if err := k.c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	key := client.ObjectKeyFromObject(o)
	for {
		if err := k.c.Get(ctx, key, o); apierrors.IsNotFound(err) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s still there: %w", key, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// exec runs argv in the first container of pod ns/name, as `kubectl exec`
// does (the same API, through client-go).
func (k *cluster) exec(ctx context.Context, ns, pod string, argv ...string) (string, string, error) {
	req := k.kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(ns).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Command: argv, Stdout: true, Stderr: true}, clientgoscheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(k.cfg, "POST", req.URL())
	if err != nil {
		return "", "", err
	}
	var stdout, stderr bytes.Buffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
	return stdout.String(), stderr.String(), err
}

// runningPod is the one running, not terminating pod with labels in ns.
func (k *cluster) runningPod(ctx context.Context, ns string, lbl map[string]string) (*corev1.Pod, error) {
	var pods corev1.PodList
	if err := k.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(lbl)); err != nil {
		return nil, err
	}
	var found []*corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
			found = append(found, p)
		}
	}
	if len(found) != 1 {
		return nil, fmt.Errorf("%d running pods with %v in %s", len(found), lbl, ns)
	}
	return found[0], nil
}

// serviceAddr is the ClusterIP:port of Service ns/name (the host of the
// local cluster reaches ClusterIPs directly).
func (k *cluster) serviceAddr(ctx context.Context, ns, name string, port int32) (string, error) {
	var svc corev1.Service
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &svc); err != nil {
		return "", err
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return "", fmt.Errorf("Service %s/%s has no ClusterIP", ns, name)
	}
	return fmt.Sprintf("%s:%d", svc.Spec.ClusterIP, port), nil
}

// secretValue reads one key of a Secret.
func (k *cluster) secretValue(ctx context.Context, ns, name, key string) (string, error) {
	var s corev1.Secret
	if err := k.c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
		return "", err
	}
	v, ok := s.Data[key]
	if !ok {
		return "", fmt.Errorf("Secret %s/%s has no key %s", ns, name, key)
	}
	return string(v), nil
}

// waitReady polls until the GarraServer key has Ready=True for its current
// generation, and says what it last saw when it gives up.
func (k *cluster) waitReady(ctx context.Context, key client.ObjectKey, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		cur := &garrav1alpha1.GarraServer{}
		if err := k.c.Get(ctx, key, cur); err != nil {
			last = err.Error()
		} else if c := meta.FindStatusCondition(cur.Status.Conditions, garrav1alpha1.ConditionReady); c == nil {
			last = "no Ready condition"
		} else if c.ObservedGeneration != cur.Generation {
			last = fmt.Sprintf("Ready is of generation %d, the spec is %d", c.ObservedGeneration, cur.Generation)
		} else if c.Status == metav1.ConditionTrue {
			return nil
		} else {
			last = fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("GarraServer %s not Ready within %s: %s", key, timeout, last)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
