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
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
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
		Reports:         newMemberReports(),
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
	if err := r.SetupWithManager(mgr); err != nil {
		return err
	}
	return (&OrchestratorReconciler{Client: mgr.GetClient(), SandboxImage: images.Sandbox, WatchNamespaces: r.WatchNamespaces, Reports: r.Reports}).
		SetupWithManager(mgr)
}

// SetupWithManager registers the controller: it watches GarraServers, the
// children it controls, the Secrets a spec names (to roll pods when they
// change), the workspace claims (a retained one has no owner reference),
// the Orchestrators that name a server, the objects of the attached ones
// (owned by their Orchestrator, found by label) and, cluster-wide, the
// Namespaces whose labels a Selector rule reads.
func (r *GarraServerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(context.Background(), &garrav1alpha1.GarraServer{}, secretRefIndex,
		func(o client.Object) []string { return ReferencedSecretNames(o.(*garrav1alpha1.GarraServer)) }); err != nil {
		return err
	}
	if err := idx.IndexField(context.Background(), &garrav1alpha1.Orchestrator{}, serverRefIndex, serverRefOf); err != nil {
		return err
	}
	if err := idx.IndexField(context.Background(), &garrav1alpha1.Orchestrator{}, secretRefIndex, orchestratorSecretRefs); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr)
	if r.ServiceMonitors {
		b = b.Owns(newServiceMonitor())
	}
	if len(r.WatchNamespaces) == 0 {
		b = b.Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceToServers))
	}
	for _, attached := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &corev1.ServiceAccount{},
		&networkingv1.NetworkPolicy{}, &rbacv1.Role{}, &rbacv1.RoleBinding{}} {
		b = b.Watches(attached, handler.EnqueueRequestsFromMapFunc(byServerLabel))
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
		// Its status is the Orchestrator controller's, written from this
		// reconciler's own reports: an update of it alone is no news here.
		Watches(&garrav1alpha1.Orchestrator{}, orchestratorToServers(),
			builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		Complete(r)
}

// SetupWithManager registers the Orchestrator status controller: it
// watches Orchestrators, their servers' specs (a rule or inline entry
// changed; their status changes on every probe and would wake every
// Orchestrator for nothing), their namespaces (labels changed), the
// Secrets they name (a credential's appeared or went), their sandbox
// Deployments and the server reconciler's reports.
func (r *OrchestratorReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named(OrchestratorControllerName).
		For(&garrav1alpha1.Orchestrator{}).
		Owns(&appsv1.Deployment{}).
		Watches(&garrav1alpha1.GarraServer{}, handler.EnqueueRequestsFromMapFunc(r.serverToOrchestrators),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.secretToOrchestrators))
	if r.Reports != nil {
		b = b.WatchesRawSource(r.Reports.source())
	}
	if len(r.WatchNamespaces) == 0 {
		b = b.Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceToOrchestrators))
	}
	return b.Complete(r)
}

// serverToOrchestrators maps a GarraServer to the Orchestrators naming it.
func (r *OrchestratorReconciler) serverToOrchestrators(ctx context.Context, o client.Object) []reconcile.Request {
	var list garrav1alpha1.OrchestratorList
	if err := r.List(ctx, &list, client.MatchingFields{serverRefIndex: client.ObjectKeyFromObject(o).String()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list Orchestrators naming a GarraServer", "server", client.ObjectKeyFromObject(o))
		return nil
	}
	return requestsFor(list.Items)
}

// secretToOrchestrators maps a Secret to the Orchestrators of its
// namespace that name it (a credential appearing changes their status).
func (r *OrchestratorReconciler) secretToOrchestrators(ctx context.Context, o client.Object) []reconcile.Request {
	var list garrav1alpha1.OrchestratorList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{secretRefIndex: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list Orchestrators naming a Secret", "secret", o.GetName())
		return nil
	}
	return requestsFor(list.Items)
}

// namespaceToOrchestrators maps a Namespace to the Orchestrators in it.
func (r *OrchestratorReconciler) namespaceToOrchestrators(ctx context.Context, o client.Object) []reconcile.Request {
	var list garrav1alpha1.OrchestratorList
	if err := r.List(ctx, &list, client.InNamespace(o.GetName())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list Orchestrators of a namespace", "namespace", o.GetName())
		return nil
	}
	return requestsFor(list.Items)
}

func requestsFor(items []garrav1alpha1.Orchestrator) []reconcile.Request {
	reqs := make([]reconcile.Request, 0, len(items))
	for i := range items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&items[i])})
	}
	return reqs
}

// namespaceToServers maps a Namespace to the servers its Orchestrators
// name, whose accepted set its labels may change.
func (r *GarraServerReconciler) namespaceToServers(ctx context.Context, o client.Object) []reconcile.Request {
	var list garrav1alpha1.OrchestratorList
	if err := r.List(ctx, &list, client.InNamespace(o.GetName())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list Orchestrators of a namespace", "namespace", o.GetName())
		return nil
	}
	seen := map[client.ObjectKey]bool{}
	var reqs []reconcile.Request
	for i := range list.Items {
		if k := serverKey(&list.Items[i]); !seen[k] {
			seen[k] = true
			reqs = append(reqs, reconcile.Request{NamespacedName: k})
		}
	}
	return reqs
}

// orchestratorToServers maps an Orchestrator to the server it names and,
// when its serverRef changed, to the one it named before, which must let
// it go.
func orchestratorToServers() handler.EventHandler {
	key := func(o client.Object) reconcile.Request {
		return reconcile.Request{NamespacedName: serverKey(o.(*garrav1alpha1.Orchestrator))}
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(key(e.Object))
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(key(e.Object))
		},
		GenericFunc: func(_ context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(key(e.Object))
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			q.Add(key(e.ObjectNew))
			if old := key(e.ObjectOld); old != key(e.ObjectNew) {
				q.Add(old)
			}
		},
	}
}

// byServerLabel maps an attached Orchestrator's object to its server,
// named by its labels; other objects map to nothing here.
func byServerLabel(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	ns, ok := l[LabelNamespace]
	if !ok || l[LabelName] != AppName || l[LabelInstance] == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: l[LabelInstance]}}}
}

// secretToServers maps a Secret to the GarraServer that controls it and to
// those whose spec names it.
func (r *GarraServerReconciler) secretToServers(ctx context.Context, o client.Object) []reconcile.Request {
	var reqs []reconcile.Request
	if ref := ctrlOwner(o); ref != "" {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: ref}})
	}
	reqs = append(reqs, byServerLabel(ctx, o)...)
	var list garrav1alpha1.GarraServerList
	if err := r.List(ctx, &list, client.InNamespace(o.GetNamespace()), client.MatchingFields{secretRefIndex: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list GarraServers naming a Secret", "secret", o.GetName())
		return reqs
	}
	for _, gs := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: gs.Namespace, Name: gs.Name}})
	}
	var orchs garrav1alpha1.OrchestratorList
	if err := r.List(ctx, &orchs, client.InNamespace(o.GetNamespace()), client.MatchingFields{secretRefIndex: o.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list Orchestrators naming a Secret", "secret", o.GetName())
		return reqs
	}
	for i := range orchs.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: serverKey(&orchs.Items[i])})
	}
	return reqs
}

// byInstanceLabel maps a child to its GarraServer by label: in the child's
// namespace, or the one an attached Orchestrator's child names.
func byInstanceLabel(ctx context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if l[LabelName] != AppName || l[LabelInstance] == "" {
		return nil
	}
	if _, ok := l[LabelNamespace]; ok {
		return byServerLabel(ctx, o)
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
