package controllers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// GarraServerReconciler keeps a GarraServer's children as its spec says and
// writes its status.
type GarraServerReconciler struct {
	// Client reads through the manager's cache and writes to the API server.
	client.Client
	// APIReader reads around the cache, only for a generated Secret that
	// exists but that the cache has not seen yet.
	APIReader client.Reader
	// Recorder emits events on the GarraServer.
	Recorder events.EventRecorder
	// GarraImage and SandboxImage are the manager's default images.
	GarraImage, SandboxImage string
	// Rand is the entropy of generated credentials (crypto/rand.Reader).
	Rand io.Reader
	// Now is the clock of token overlaps; nil means time.Now.
	Now func() time.Time
	// Probe asks the gateway which config it runs; nil means it is not
	// asked (ConfigApplied is Unknown, NotProbed).
	Probe GatewayProbe
	// ProbeURL is where Probe asks; nil means GatewayReadyzURL.
	ProbeURL func(*garrav1alpha1.GarraServer) string
	// ServiceMonitors: apply a ServiceMonitor per gateway (the manager
	// found the Prometheus Operator's CRD at start).
	ServiceMonitors bool
	// Tracer makes a span of each reconcile pass and of each of its
	// steps; nil makes none (WithTracerProvider).
	Tracer trace.Tracer
	// WatchNamespaces are the namespaces a namespace-scoped manager
	// watches; empty means all. Such a manager is meant to hold Roles
	// only, so it touches no cluster-scoped object whatever RBAC it has.
	WatchNamespaces []string
	// SandboxProbe asks the gateway how its handshake with each sandbox
	// went (the Verified condition); nil means it is not asked.
	SandboxProbe SandboxProbe
	// SandboxProbeURL is where SandboxProbe asks; nil means
	// GatewaySandboxzURL.
	SandboxProbeURL func(*garrav1alpha1.GarraServer) string
}

func (r *GarraServerReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// reconcileState is what one reconcile learns on its way, step by step.
type reconcileState struct {
	gs *garrav1alpha1.GarraServer
	// members are its orchestrators: the inline entries, then the
	// accepted Orchestrators that name it.
	members []member
	// invalid is a permanent error: the spec must change before anything
	// is applied. The controller does not retry it.
	invalid string
	// configYAML is the rendered config.yml.
	configYAML string
	// values holds every Secret key the pods read ("secret/key"), missing
	// the ones that do not exist.
	values  map[string][]byte
	missing []secretRef
	// removed are the orchestrators whose objects this reconcile deleted.
	removed []string
	// rotations are the orchestrators with a replaced token still
	// accepted, and until when.
	rotations map[string]time.Time
	// requeue is when the next pass is due without any event (a previous
	// token to retire, a gateway yet to load the config); 0 means never.
	requeue time.Duration
	// rotateAck is set when the rotate-token annotation has been handled
	// and is to be removed.
	rotateAck bool
	// failed names the step that failed and why; the status says so and
	// the reconcile is retried.
	failed string
	// tokenReview is the TokenReviewAccess message of a namespace-scoped
	// operator that cannot bind the gateway for TokenReviews; "" otherwise.
	tokenReview string
}

// +kubebuilder:rbac:groups=garra.garraia.io,resources=garraservers,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=garra.garraia.io,resources=garraservers/status,verbs=get;patch
// +kubebuilder:rbac:groups=garra.garraia.io,resources=garraservers/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=services;serviceaccounts;persistentvolumeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;patch;delete

// Reconcile brings one GarraServer's children to its spec:
//
//  1. load the GarraServer (gone: nothing to do, its children cascade)
//     and the Orchestrators it accepts, which join its inline entries;
//  2. validate what the schema cannot (images, rendered config): a
//     permanent error only sets the Ready condition;
//  3. replace the generated Secrets of the orchestrators the rotate-token
//     annotation names, then generate those that do not exist yet;
//  4. read every Secret key the gateway reads (some values feed the pod
//     template's hash, the tokens NAME-gateway-tokens; a missing one is
//     reported, not fatal), and refuse as invalid a bearer token that
//     two callers share;
//  5. apply the gateway's objects (the tokens Secret first, then remove a
//     handled rotate-token annotation; its ServiceMonitor when the
//     Prometheus Operator is installed), then each orchestrator's;
//  6. scale to zero the idle-enabled sandboxes without a recent call,
//     then delete the objects of orchestrators no longer in the spec;
//  7. write the status, derived from what is in the cluster now and from
//     the gateway's answer about the config it runs.
//
// Policy and tokens reach the running gateway through its mounted
// ConfigMap and tokens Secret, so only what needs a new process changes a
// pod template. The reconcile is requeued while a replaced token awaits
// retirement or the gateway has not loaded the rendered config.
//
// Steps 3 to 6 write only what differs, so a reconcile that finds
// everything as desired writes nothing. The status is written on every
// pass, also when a step fails: Ready turns False with reason ApplyFailed
// naming the step, instead of keeping conditions from an earlier pass.
func (r *GarraServerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	gs := &garrav1alpha1.GarraServer{}
	if err := r.Get(ctx, req.NamespacedName, gs); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !gs.DeletionTimestamp.IsZero() {
		// Namespaced children cascade; the cluster-scoped binding does not.
		return ctrl.Result{}, r.releaseTokenReview(ctx, gs)
	}

	s := &reconcileState{gs: gs, values: map[string][]byte{}}
	steps := []struct {
		name string
		run  func(context.Context, *reconcileState) error
	}{
		{"list orchestrators", r.listMembers},
		{"validate spec", r.validate},
		{"rotate tokens", r.rotateTokens},
		{"generate secrets", r.ensureSecrets},
		{"read secrets", r.readSecrets},
		{"validate tokens", r.validateTokens},
		{"apply identity", r.applyIdentity},
		{"apply wake role", func(ctx context.Context, s *reconcileState) error { return r.applyWakeRole(ctx, s.gs, s.members) }},
		{"apply gateway", r.applyGateway},
		{"apply service monitor", r.applyServiceMonitor},
		{"apply orchestrators", r.applyOrchestrators},
		{"suspend idle sandboxes", r.suspendIdle},
		{"remove orchestrators", r.removeStale},
	}
	ctx, pass := r.startPass(ctx, gs)
	defer pass.End()
	var stepErr error
	for _, step := range steps {
		if err := r.runStep(ctx, step.name, func(ctx context.Context) error { return step.run(ctx, s) }); err != nil {
			stepErr = fmt.Errorf("%s %s/%s: %w", step.name, gs.Namespace, gs.Name, err)
			s.failed = fmt.Sprintf("%s: %v", step.name, err)
			break
		}
		if s.invalid != "" {
			log.FromContext(ctx).Info("invalid spec, not applied", "reason", s.invalid)
			break
		}
	}
	if err := r.runStep(ctx, "write status", func(ctx context.Context) error { return r.writeStatus(ctx, s) }); err != nil {
		err = errors.Join(stepErr, fmt.Errorf("write status of %s/%s: %w", gs.Namespace, gs.Name, err))
		endPass(pass, s, err)
		return ctrl.Result{}, err
	}
	endPass(pass, s, stepErr)
	if stepErr != nil {
		return ctrl.Result{}, stepErr
	}
	return ctrl.Result{RequeueAfter: s.requeue}, nil
}

// requeueAt asks for a pass within d (the earliest request wins); a due
// time already past asks for one in a second.
func (s *reconcileState) requeueAt(d time.Duration) {
	if d < time.Second {
		d = time.Second
	}
	if s.requeue == 0 || d < s.requeue {
		s.requeue = d
	}
}

// event records an event on the GarraServer.
func (r *GarraServerReconciler) event(gs *garrav1alpha1.GarraServer, warning bool, reason, action, format string, args ...any) {
	if r.Recorder == nil {
		return
	}
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(gs, nil, typ, reason, action, format, args...)
}
