package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// MetricStepSeconds is the histogram of a GarraServer pass's steps, by
// step name (the names of Reconcile's steps and "write status"). The
// manager's controller_runtime_reconcile_time_seconds says how long a pass
// took; this says which step took it.
const MetricStepSeconds = "garra_reconcile_step_seconds"

var stepSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
	Name: MetricStepSeconds,
	Help: "Duration of each step of a GarraServer reconcile pass, by step.",
	// From a cached read (~0.1 ms) to a probe that times out (ProbeTimeout).
	Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
}, []string{"step"})

// Registered once, in the registry the manager serves on /metrics, as
// controller-runtime registers its own.
func init() { ctrlmetrics.Registry.MustRegister(stepSeconds) }
