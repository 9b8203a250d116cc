package controllers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"go.opentelemetry.io/otel/trace"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
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
	// Reports is where each pass leaves what it learned about the
	// attached Orchestrators, for their status; nil keeps nothing.
	Reports *memberReports
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
	// refused are the Orchestrators that name it and are not members;
	// clashes those among them the whole set refused (clashOf,
	// tokenClash), which their own status learns from the reports.
	refused []refusal
	clashes map[string]attachment
	// memberFailed are the attached members whose objects this pass
	// could not write, and why (isolate).
	memberFailed map[string]string
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
	// and is to be removed; rotatedAttached are the Orchestrators whose
	// own annotation has been.
	rotateAck       bool
	rotatedAttached []*garrav1alpha1.Orchestrator
	// acked is set once this pass removed a rotate-token annotation, a
	// change of the policy's inputs that is its own (see lookout).
	acked bool
	// lookout watches for a newer policy once this pass has published its
	// own; yielded is set when one came and the pass stopped for it.
	lookout *yieldCheck
	yielded bool
	// failed names the step that failed and why; the status says so and
	// the reconcile is retried.
	failed string
	// tokenReview is the TokenReviewAccess message of a namespace-scoped
	// operator that cannot bind the gateway for TokenReviews; "" otherwise.
	tokenReview string
	// egressCA is the egress CA's certificate (public, PEM) when some
	// member goes out through the gateway.
	egressCA []byte
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
//     annotation names, then generate those that do not exist yet (the
//     egress CA too, once a member goes out through the gateway);
//  4. read every Secret key the gateway reads (some values feed the pod
//     template's hash, the tokens NAME-gateway-tokens; a missing one is
//     reported, not fatal), and refuse as invalid a bearer token that
//     two callers share;
//  5. publish the policy: the tokens Secret (and each member's sandbox
//     token Secret), then remove a handled rotate-token annotation, then
//     the ConfigMap;
//  6. apply the gateway's identity, Roles and objects (its ServiceMonitor
//     when the Prometheus Operator is installed), then each
//     orchestrator's;
//  7. scale to zero the idle-enabled sandboxes without a recent call,
//     then delete the objects of orchestrators no longer in the spec;
//  8. write the status, derived from what is in the cluster now and from
//     the gateway's answer about the config it runs.
//
// Policy and tokens reach the running gateway through its ConfigMap and
// tokens Secret, which it watches, so only what needs a new process
// changes a pod template. The reconcile is requeued while a replaced
// token awaits retirement or the gateway has not loaded the rendered
// config. From step 6 on, a pass yields to a newer policy (yield.go): it
// stops, unreported, and the next pass publishes that policy first.
//
// Steps 3 to 7 write only what differs, so a reconcile that finds
// everything as desired writes nothing. The status is written on every
// pass, also when a step fails: Ready turns False with reason ApplyFailed
// naming the step, instead of keeping conditions from an earlier pass.
func (r *GarraServerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	gs := &garrav1alpha1.GarraServer{}
	if err := r.Get(ctx, req.NamespacedName, gs); err != nil {
		if apierrors.IsNotFound(err) {
			r.Reports.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !gs.DeletionTimestamp.IsZero() {
		r.Reports.forget(req.NamespacedName)
		// Namespaced children cascade; the cluster-scoped binding does not.
		return ctrl.Result{}, r.releaseTokenReview(ctx, gs)
	}

	s := &reconcileState{gs: gs, values: map[string][]byte{}}
	s.lookout = &yieldCheck{r: r, key: req.NamespacedName, now: r.now}
	s.lookout.rebase(ctx)
	// The steps after "apply policy" (afterPolicy) yield to a newer
	// policy: see yield.go.
	steps := []struct {
		name        string
		run         func(context.Context, *reconcileState) error
		afterPolicy bool
	}{
		{"list orchestrators", r.listMembers, false},
		{"validate spec", r.validate, false},
		{"rotate tokens", r.rotateTokens, false},
		{"generate secrets", r.ensureSecrets, false},
		{"read secrets", r.readSecrets, false},
		{"validate tokens", r.validateTokens, false},
		{"apply policy", r.applyPolicy, false},
		{"apply identity", r.applyIdentity, true},
		{"apply wake role", func(ctx context.Context, s *reconcileState) error { return r.applyWakeRole(ctx, s.gs, s.members) }, true},
		{"apply policy role", r.applyPolicyRole, true},
		{"apply gateway", r.applyGateway, true},
		{"apply service monitor", r.applyServiceMonitor, true},
		{"apply orchestrators", r.applyOrchestrators, true},
		{"suspend idle sandboxes", r.suspendIdle, true},
		{"remove orchestrators", r.removeStale, true},
	}
	ctx, pass := r.startPass(ctx, gs)
	defer pass.End()
	// runCtx is ctx until the policy is out, then ctx under the look-out
	// for a newer one.
	runCtx, stopWatch := ctx, func() {}
	defer func() { stopWatch() }()
	var stepErr error
	for _, step := range steps {
		if step.afterPolicy && !s.lookout.active {
			if s.acked {
				// Its own removal of the annotation is no newer policy.
				s.lookout.rebase(ctx)
			}
			runCtx, stopWatch = s.lookout.watch(ctx)
		}
		if step.afterPolicy && s.yield(runCtx) {
			break
		}
		if err := r.runStep(runCtx, step.name, func(ctx context.Context) error { return step.run(ctx, s) }); err != nil {
			if s.yield(runCtx) {
				break
			}
			stepErr = fmt.Errorf("%s %s/%s: %w", step.name, gs.Namespace, gs.Name, err)
			s.failed = fmt.Sprintf("%s: %v", step.name, err)
			break
		}
		if s.invalid != "" {
			log.FromContext(ctx).Info("invalid spec, not applied", "reason", s.invalid)
			break
		}
		if s.yielded {
			break
		}
	}
	yield := func() (ctrl.Result, error) {
		// The newer policy's event has queued the next pass, which
		// writes the status of everything as it then is.
		log.FromContext(ctx).V(1).Info("pass yielded to a newer policy after publishing its own")
		endPass(pass, s, nil)
		return ctrl.Result{}, nil
	}
	if stepErr == nil && s.yield(runCtx) {
		return yield()
	}
	if err := r.runStep(runCtx, "write status", func(ctx context.Context) error { return r.writeStatus(ctx, s) }); err != nil {
		if stepErr == nil && s.yield(runCtx) {
			return yield()
		}
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
	r.eventAbout(gs, nil, warning, reason, action, format, args...)
}

// eventAbout records an event on the GarraServer about one of its objects.
// The recorder folds events of one pass that share their regarding object,
// reason and related object into a single event whose note is the first
// one's, so the related object is what keeps "generated Secret a" and
// "generated Secret b" two events, each with its own note.
func (r *GarraServerReconciler) eventAbout(gs *garrav1alpha1.GarraServer, related runtime.Object, warning bool, reason, action, format string, args ...any) {
	if r.Recorder == nil {
		return
	}
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(gs, related, typ, reason, action, format, args...)
}
