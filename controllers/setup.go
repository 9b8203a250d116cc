package controllers

import (
	"context"
	"crypto/rand"
	"net/http"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8slabels "k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// ControllerName names the controller (logs, metrics).
const ControllerName = "garraserver"

// secretRefIndex indexes GarraServers by the Secrets their spec names.
const secretRefIndex = ".spec.secretRefs" //nolint:gosec // G101: an index name

// CacheOptions are the manager's cache settings: children are cached only
// when labelled app.kubernetes.io/name=garra (a child that lost its label
// looks absent and is applied again); Secrets are cached whole because a
// bring-your-own Secret carries no label of ours, without managedFields
// (the controller never applies a Secret). With watch namespaces, every
// namespaced kind is cached (and so listed and watched) in those only,
// which is what lets a manager run on Roles alone.
func CacheOptions(watch ...string) cache.Options {
	ours := k8slabels.SelectorFromSet(k8slabels.Set{LabelName: AppName})
	var namespaces map[string]cache.Config
	for _, ns := range watch {
		if namespaces == nil {
			namespaces = map[string]cache.Config{}
		}
		namespaces[ns] = cache.Config{}
	}
	return cache.Options{
		DefaultNamespaces: namespaces,
		ByObject: map[client.Object]cache.ByObject{
			&appsv1.Deployment{}:            {Label: ours},
			&corev1.Service{}:               {Label: ours},
			&corev1.ConfigMap{}:             {Label: ours},
			&corev1.ServiceAccount{}:        {Label: ours},
			&corev1.PersistentVolumeClaim{}: {Label: ours},
			&networkingv1.NetworkPolicy{}:   {Label: ours},
			&corev1.Secret{}:                {Transform: cache.TransformStripManagedFields()},
			&rbacv1.ClusterRole{}:           {Label: ours},
			&rbacv1.ClusterRoleBinding{}:    {Label: ours},
		},
	}
}

// Images are the manager's default images, used when a GarraServer names none.
type Images struct {
	Garra, Sandbox string
}

// Option changes how Setup wires the reconciler.
type Option func(*GarraServerReconciler)

// WithWatchNamespaces tells the reconciler it watches only these
// namespaces (the manager's cache must be CacheOptions(namespaces...)).
func WithWatchNamespaces(namespaces []string) Option {
	return func(r *GarraServerReconciler) { r.WatchNamespaces = namespaces }
}

// WithoutServiceMonitors applies no ServiceMonitor per gateway even when the
// Prometheus Operator is installed (--gateway-service-monitors=false).
func WithoutServiceMonitors() Option {
	return func(r *GarraServerReconciler) { r.ServiceMonitors = false }
}

// WithGatewayProbe replaces the HTTP question to the gateway's /readyz
// and where it is sent.
func WithGatewayProbe(p GatewayProbe, url func(*garrav1alpha1.GarraServer) string) Option {
	return func(r *GarraServerReconciler) { r.Probe, r.ProbeURL = p, url }
}

// WithSandboxProbe replaces the HTTP question to the gateway's /sandboxz
// and where it is sent.
func WithSandboxProbe(p SandboxProbe, url func(*garrav1alpha1.GarraServer) string) Option {
	return func(r *GarraServerReconciler) { r.SandboxProbe, r.SandboxProbeURL = p, url }
}

// Setup builds the GarraServer reconciler on mgr, the one way the manager,
// the envtest suite and the benchmark all wire it: the manager's client
// and API reader, an event recorder under the field owner's name,
// crypto/rand for generated credentials, and HTTP probes of each
// gateway's /readyz and /sandboxz (ProbeTimeout per question, no
// redirects followed). It asks the API server once whether it serves
// ServiceMonitors: a Prometheus Operator installed later needs a restart
// of the manager.
func Setup(mgr ctrl.Manager, images Images, opts ...Option) error {
	monitors, err := ServiceMonitorsServed(mgr.GetRESTMapper())
	if err != nil {
		return err
	}
	probeClient := &http.Client{
		Timeout:       ProbeTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	r := &GarraServerReconciler{
		Client:          mgr.GetClient(),
		APIReader:       mgr.GetAPIReader(),
		Recorder:        mgr.GetEventRecorder(FieldOwner),
		GarraImage:      images.Garra,
		SandboxImage:    images.Sandbox,
		Rand:            rand.Reader,
		Probe:           HTTPGatewayProbe(probeClient),
		SandboxProbe:    HTTPSandboxProbe(probeClient),
		ServiceMonitors: monitors,
	}
	for _, o := range opts {
		o(r)
	}
	return r.SetupWithManager(mgr)
}

// SetupWithManager registers the controller: it watches GarraServers, the
// children it controls, the Secrets a spec names (to roll pods when they
// change) and the workspace claims (a retained one has no owner reference).
func (r *GarraServerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &garrav1alpha1.GarraServer{}, secretRefIndex,
		func(o client.Object) []string { return ReferencedSecretNames(o.(*garrav1alpha1.GarraServer)) }); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr)
	if r.ServiceMonitors {
		b = b.Owns(newServiceMonitor())
	}
	return b.
		Named(ControllerName).
		For(&garrav1alpha1.GarraServer{}).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.secretToServers)).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(byInstanceLabel)).
		Complete(r)
}

// secretToServers maps a Secret to the GarraServer that controls it and to
// those whose spec names it.
func (r *GarraServerReconciler) secretToServers(ctx context.Context, o client.Object) []reconcile.Request {
	var reqs []reconcile.Request
	if ref := ctrlOwner(o); ref != "" {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: ref}})
	}
	var list garrav1alpha1.GarraServerList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{secretRefIndex: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list GarraServers naming a Secret", "secret", o.GetName())
		return reqs
	}
	for _, gs := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: gs.Namespace, Name: gs.Name}})
	}
	return reqs
}

// byInstanceLabel maps a child to its GarraServer by label.
func byInstanceLabel(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if l[LabelName] != AppName || l[LabelInstance] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: l[LabelInstance]}}}
}

// ctrlOwner is the name of the GarraServer controlling o, or "".
func ctrlOwner(o client.Object) string {
	ref := metav1.GetControllerOfNoCopy(o)
	if ref == nil || ref.Kind != serverKind.Kind || ref.APIVersion != serverKind.GroupVersion().String() {
		return ""
	}
	return ref.Name
}
