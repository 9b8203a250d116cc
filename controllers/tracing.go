package controllers

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/otelenv"
)

// Span names and attributes of a reconcile pass. One pass is one trace
// (a root span), each step of it a child span named after the step, so a
// slow or failing step shows up by name next to the API calls it made.
const (
	SpanReconcile = "reconcile GarraServer"
	// AttrOutcome is the pass's result: ok, invalid (the spec was not
	// applied), failed (a step or the status write failed) or yielded
	// (it stopped for a newer policy after publishing its own).
	AttrOutcome = attribute.Key("garra.reconcile.outcome")
	// AttrGarraServer is the GarraServer's name (its namespace is
	// k8s.namespace.name).
	AttrGarraServer = attribute.Key("garra.garraserver.name")
	// AttrGeneration is the spec generation the pass acted on.
	AttrGeneration = attribute.Key("garra.garraserver.generation")
	// AttrRequeue is the requested wait before the next pass, in seconds
	// (0: none beyond the watches).
	AttrRequeue = attribute.Key("garra.reconcile.requeue_seconds")
)

// WithTracerProvider makes each reconcile pass a trace of spans from tp;
// without it (or with a nil tp) no span is made.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(r *GarraServerReconciler) {
		if tp != nil {
			r.Tracer = tp.Tracer(otelenv.ScopeName)
		}
	}
}

func (r *GarraServerReconciler) tracer() trace.Tracer {
	if r.Tracer == nil {
		return noop.NewTracerProvider().Tracer("")
	}
	return r.Tracer
}

// startPass opens the root span of one pass over gs. A pass is started by
// a watch event or a requeue, never by a caller's request, so it is a root
// of its own even when ctx carries a span.
func (r *GarraServerReconciler) startPass(ctx context.Context, gs *garrav1alpha1.GarraServer) (context.Context, trace.Span) {
	return r.tracer().Start(ctx, SpanReconcile, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(
			semconv.K8SNamespaceName(gs.Namespace),
			AttrGarraServer.String(gs.Name),
			AttrGeneration.Int64(gs.Generation),
		))
}

// runStep runs one step under a child span, timed in MetricStepSeconds; a
// failed step's span carries the error. Error texts are API server
// messages and object names, and the exporter redacts every text on its
// way out anyway.
func (r *GarraServerReconciler) runStep(ctx context.Context, name string, run func(context.Context) error) error {
	ctx, span := r.tracer().Start(ctx, name)
	defer span.End()
	start := time.Now()
	err := run(ctx)
	stepSeconds.WithLabelValues(name).Observe(time.Since(start).Seconds())
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	return err
}

// endPass records the pass's outcome on its root span.
func endPass(span trace.Span, s *reconcileState, err error) {
	switch {
	case err != nil:
		span.SetAttributes(AttrOutcome.String("failed"))
		span.SetStatus(codes.Error, err.Error())
	case s.invalid != "":
		span.SetAttributes(AttrOutcome.String("invalid"))
		span.SetStatus(codes.Error, "invalid spec: "+s.invalid)
	case s.yielded:
		span.SetAttributes(AttrOutcome.String("yielded"))
	default:
		span.SetAttributes(AttrOutcome.String("ok"), AttrRequeue.Float64(s.requeue.Seconds()))
	}
}
