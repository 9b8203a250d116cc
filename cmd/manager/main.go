// Command manager is the Garra operator: a controller-runtime manager
// running the GarraServer controller (controllers/).
//
// Flags: --metrics-bind-address (":8080"; "0" disables),
// --health-probe-bind-address (":8081", serving /healthz and /readyz),
// --leader-elect, --leader-election-namespace, --leader-election-id,
// --watch-namespace (one namespace or a comma list; empty: all), --garra-image,
// --sandbox-image, --gateway-service-monitors (true: a ServiceMonitor per
// gateway when the Prometheus Operator's CRD is installed), and
// controller-runtime's --kubeconfig (or $KUBECONFIG, or the in-cluster
// config).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/controllers"
	"github.com/garraia/garra/internal/telemetry"
)

// Default images, overridden by the deployment (kustomize, Helm). The
// sandbox's is the Dockerfile's sandbox target: an agent's shell needs bash,
// which the garra image (distroless) does not have.
const (
	defaultGarraImage   = "garra:latest"
	defaultSandboxImage = "garra-sandbox:latest"
)

// LeaderElectionID is the default name of the Lease the replicas of the
// manager compete for (--leader-election-id).
const LeaderElectionID = "garra-operator.garra.garraia.io"

// TracingServiceName is the service.name of the manager's spans unless
// OTEL_SERVICE_NAME says otherwise.
const TracingServiceName = "garra-operator"

type options struct {
	metricsAddr, probeAddr   string
	leaderElect              bool
	garraImage, sandboxImage string
	leaderElectionNamespace  string
	leaderElectionID         string
	watchNamespaces          []string
	serviceMonitors          bool
	zap                      zap.Options
	// skipNameValidation lets tests run several managers in one process
	// (controller names are unique per process); no flag sets it.
	skipNameValidation bool
}

func parseFlags(fs *flag.FlagSet, args []string) (options, error) {
	var o options
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", `address of the metrics endpoint; "0" disables it`)
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address of /healthz and /readyz")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "elect a leader, so that only one replica reconciles")
	fs.StringVar(&o.leaderElectionNamespace, "leader-election-namespace", "", "namespace of the leader Lease (default: the pod's namespace)")
	fs.StringVar(&o.garraImage, "garra-image", defaultGarraImage, "gateway image of a GarraServer with an empty spec.image")
	fs.StringVar(&o.sandboxImage, "sandbox-image", defaultSandboxImage, "sandbox image of an orchestrator with no image of its own nor spec.sandboxImage")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", LeaderElectionID, "name of the leader Lease; two managers sharing a Lease namespace need different ones")
	var watch string
	fs.StringVar(&watch, "watch-namespace", "", "namespace, or comma-separated namespaces, whose GarraServers the manager reconciles (default: all); it then manages nothing cluster-scoped and needs only Roles in them")
	fs.BoolVar(&o.serviceMonitors, "gateway-service-monitors", true, "create a ServiceMonitor per gateway when the API server serves monitoring.coreos.com/v1 ServiceMonitors")
	o.zap.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	var err error
	if o.watchNamespaces, err = parseNamespaces(watch); err != nil {
		return o, fmt.Errorf("--watch-namespace: %w", err)
	}
	if o.leaderElectionID == "" {
		return o, errors.New("--leader-election-id: empty")
	}
	return o, nil
}

// parseNamespaces splits a comma list of namespace names, refusing an
// invalid or repeated one; "" is none (all namespaces).
func parseNamespaces(list string) ([]string, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var out []string
	for _, ns := range strings.Split(list, ",") {
		ns = strings.TrimSpace(ns)
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("namespace %q: %s", ns, strings.Join(errs, "; "))
		}
		if slices.Contains(out, ns) {
			return nil, fmt.Errorf("namespace %q given twice", ns)
		}
		out = append(out, ns)
	}
	return out, nil
}

// newScheme knows the built-in types and GarraServer.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(garrav1alpha1.AddToScheme(s))
	return s
}

func main() {
	// flag.CommandLine carries controller-runtime's --kubeconfig.
	o, err := parseFlags(flag.CommandLine, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&o.zap)))
	cfg, err := ctrl.GetConfig()
	if err != nil {
		ctrl.Log.Error(err, "no kubeconfig: set --kubeconfig or KUBECONFIG, or run in a cluster")
		os.Exit(1)
	}
	if err := run(ctrl.SetupSignalHandler(), o, cfg); err != nil {
		ctrl.Log.Error(err, "manager stopped")
		os.Exit(1)
	}
}

// run starts the manager and blocks until ctx ends.
func run(ctx context.Context, o options, cfg *rest.Config) error {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  newScheme(),
		Cache:                   controllers.CacheOptions(o.watchNamespaces...),
		Metrics:                 metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress:  o.probeAddr,
		LeaderElection:          o.leaderElect,
		LeaderElectionID:        o.leaderElectionID,
		LeaderElectionNamespace: o.leaderElectionNamespace,
		// The manager exits right after losing the lease, so stepping down
		// early is safe and speeds up a rollout.
		LeaderElectionReleaseOnCancel: true,
		Controller:                    config.Controller{SkipNameValidation: &o.skipNameValidation},
	})
	if err != nil {
		return fmt.Errorf("new manager: %w", err)
	}
	// Traces of the reconcile passes, when the standard OTEL_* variables
	// name a collector; off (and free) otherwise.
	tp, flushSpans, err := telemetry.Setup(ctx, telemetry.Options{Getenv: os.Getenv, ServiceName: TracingServiceName})
	if err != nil {
		return fmt.Errorf("tracing: %w", err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := flushSpans(ctx); err != nil {
			ctrl.Log.Error(err, "tracing: spans not flushed at exit")
		}
	}()
	setupOpts := []controllers.Option{controllers.WithWatchNamespaces(o.watchNamespaces), controllers.WithTracerProvider(tp)}
	if !o.serviceMonitors {
		setupOpts = append(setupOpts, controllers.WithoutServiceMonitors())
	}
	if err := controllers.Setup(mgr, controllers.Images{Garra: o.garraImage, Sandbox: o.sandboxImage}, setupOpts...); err != nil {
		return fmt.Errorf("set up controller: %w", err)
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	// Ready once the cache has synced: before that a reconcile would act
	// on an empty view.
	cacheSynced := func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("cache not synced")
		}
		return nil
	}
	if err := mgr.AddReadyzCheck("readyz", cacheSynced); err != nil {
		return err
	}
	watching := "all namespaces"
	if len(o.watchNamespaces) > 0 {
		watching = strings.Join(o.watchNamespaces, ",")
	}
	ctrl.Log.Info("starting manager", append([]any{"garraImage", o.garraImage, "sandboxImage", o.sandboxImage, "leaderElect", o.leaderElect,
		"leaderElectionID", o.leaderElectionID, "watching", watching}, telemetry.Describe(os.Getenv, TracingServiceName)...)...)
	return mgr.Start(ctx)
}
