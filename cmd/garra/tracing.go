package main

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/garraia/garra/internal/redact"
	"github.com/garraia/garra/internal/telemetry"
)

// tracingShutdownTimeout bounds the flush of buffered spans at exit.
const tracingShutdownTimeout = 5 * time.Second

// startTracing sets up the OTLP tracer provider the OTEL_* variables ask
// for (nil when they ask for none) and returns the flush to defer. A
// variable that does not parse is a usage error naming it.
func startTracing(ctx context.Context, o *rootOptions, log *slog.Logger, service string, red func() *redact.Redactor) (trace.TracerProvider, func(), error) {
	tp, shutdown, err := telemetry.Setup(ctx, telemetry.Options{Getenv: o.getenv, ServiceName: service, Version: version, Redactor: red})
	if err != nil {
		return nil, nil, usageError("%s: %v", service, err)
	}
	if tp != nil {
		log.Info("tracing on", telemetry.Describe(o.getenv, service)...)
	}
	return tp, func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), tracingShutdownTimeout)
		defer cancel()
		if err := shutdown(ctx); err != nil {
			log.Warn("tracing: spans not flushed at exit", "error", err)
		}
	}, nil
}
