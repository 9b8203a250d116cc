package controllers

import (
	"context"
	"errors"
	"fmt"
	"io"

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
}

// reconcileState is what one reconcile learns on its way, step by step.
type reconcileState struct {
	gs *garrav1alpha1.GarraServer
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
	// failed names the step that failed and why; the status says so and
	// the reconcile is retried.
	failed string
}

// +kubebuilder:rbac:groups=garra.garraia.io,resources=garraservers,verbs=get;list;watch
// +kubebuilder:rbac:groups=garra.garraia.io,resources=garraservers/status,verbs=get;patch
// +kubebuilder:rbac:groups=garra.garraia.io,resources=garraservers/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=services;serviceaccounts;persistentvolumeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconcile brings one GarraServer's children to its spec:
//
//  1. load the GarraServer (gone: nothing to do, its children cascade);
//  2. validate what the schema cannot (images, rendered config): a
//     permanent error only sets the Ready condition;
//  3. generate the credential Secrets that do not exist yet;
//  4. read every Secret key the pods reference (their values feed the pod
//     templates' hash; a missing one is reported, not fatal);
//  5. apply the gateway's objects, then each orchestrator's;
//  6. delete the objects of orchestrators no longer in the spec;
//  7. write the status, derived from what is in the cluster now.
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
		return ctrl.Result{}, nil
	}

	s := &reconcileState{gs: gs, values: map[string][]byte{}}
	steps := []struct {
		name string
		run  func(context.Context, *reconcileState) error
	}{
		{"validate spec", r.validate},
		{"generate secrets", r.ensureSecrets},
		{"read secrets", r.readSecrets},
		{"apply gateway", r.applyGateway},
		{"apply orchestrators", r.applyOrchestrators},
		{"remove orchestrators", r.removeStale},
	}
	var stepErr error
	for _, step := range steps {
		if err := step.run(ctx, s); err != nil {
			stepErr = fmt.Errorf("%s %s/%s: %w", step.name, gs.Namespace, gs.Name, err)
			s.failed = fmt.Sprintf("%s: %v", step.name, err)
			break
		}
		if s.invalid != "" {
			log.FromContext(ctx).Info("invalid spec, not applied", "reason", s.invalid)
			break
		}
	}
	if err := r.writeStatus(ctx, s); err != nil {
		return ctrl.Result{}, errors.Join(stepErr, fmt.Errorf("write status of %s/%s: %w", gs.Namespace, gs.Name, err))
	}
	return ctrl.Result{}, stepErr
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
