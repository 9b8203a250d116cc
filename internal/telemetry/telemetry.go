// Package telemetry is Garra's OpenTelemetry tracing: one TracerProvider per
// process exporting OTLP over HTTP (protobuf), configured only by the
// standard OTEL_* variables, with every attribute redacted on its way out.
//
// Tracing is off unless an OTLP endpoint is set. Off means no provider at
// all: Setup returns a nil TracerProvider, and every instrumented seam
// (the MCP servers' middleware in internal/mcptrace, the LLM client, the
// sandbox client) is then simply not installed, so an untraced process
// pays nothing. Nothing here runs at package init: the stdio server's
// start-up must stay cheap. The spans themselves are made by the code
// that knows what they mean, through the OpenTelemetry API only.
package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/garraia/garra/internal/otelenv"
	"github.com/garraia/garra/internal/redact"
)

// The standard variables this package reads (see otelenv). The exporter
// also honours the other OTEL_EXPORTER_OTLP_* ones (headers, timeout,
// compression, certificates) itself.
const (
	EnvEndpoint       = otelenv.Endpoint
	EnvTracesEndpoint = otelenv.TracesEndpoint
	EnvServiceName    = otelenv.ServiceName
	EnvSampler        = otelenv.Sampler
	EnvSamplerArg     = otelenv.SamplerArg
	EnvSDKDisabled    = otelenv.SDKDisabled
	EnvTracesExporter = otelenv.TracesExporter
	EnvProtocol       = otelenv.Protocol
	EnvTracesProtocol = otelenv.TracesProtocol
)

// Config is what the environment asks for.
type Config struct {
	// TracesURL is the full URL spans are POSTed to ("" = tracing off).
	TracesURL   string
	ServiceName string
	// SamplerName is the OTEL_TRACES_SAMPLER value in force, for the log.
	SamplerName string
	Sampler     sdktrace.Sampler
}

// ConfigFrom reads the variables through getenv. Tracing is on when an
// endpoint is set and neither OTEL_SDK_DISABLED=true nor
// OTEL_TRACES_EXPORTER=none says otherwise; the service name and sampler
// alone export nothing. A value that does not parse is an error naming
// its variable, never a silent default.
func ConfigFrom(getenv func(string) string, defaultService string) (Config, error) {
	var c Config
	if strings.EqualFold(strings.TrimSpace(getenv(EnvSDKDisabled)), "true") {
		return c, nil
	}
	switch exp := strings.TrimSpace(getenv(EnvTracesExporter)); exp {
	case "", "otlp":
	case "none":
		return c, nil
	default:
		return c, fmt.Errorf("%s: %q is not supported (want otlp or none)", EnvTracesExporter, exp)
	}
	u, err := tracesURL(getenv)
	if err != nil || u == "" {
		return c, err
	}
	if err := checkProtocol(getenv); err != nil {
		return c, err
	}
	c.TracesURL = u
	c.ServiceName = strings.TrimSpace(getenv(EnvServiceName))
	if c.ServiceName == "" {
		c.ServiceName = defaultService
	}
	c.SamplerName, c.Sampler, err = ParseSampler(getenv(EnvSampler), getenv(EnvSamplerArg))
	if err != nil {
		return Config{}, err
	}
	return c, nil
}

// checkProtocol refuses an OTLP protocol other than http/protobuf, the
// only one Garra's exporter speaks: a collector told to expect gRPC (port
// 4317) would otherwise get HTTP requests and every span would be lost
// with nothing said. The signal-specific variable wins, as the spec says.
func checkProtocol(getenv func(string) string) error {
	name := EnvTracesProtocol
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		name = EnvProtocol
		v = strings.TrimSpace(getenv(name))
	}
	if v != "" && v != otelenv.HTTPProtobuf {
		return fmt.Errorf("%s: %q is not supported (Garra exports OTLP over %s only)", name, v, otelenv.HTTPProtobuf)
	}
	return nil
}

// tracesURL is the signal-specific endpoint as given, else the base
// endpoint with /v1/traces appended, as the OTLP exporter spec says.
func tracesURL(getenv func(string) string) (string, error) {
	if v := strings.TrimSpace(getenv(EnvTracesEndpoint)); v != "" {
		if err := checkURL(v); err != nil {
			return "", fmt.Errorf("%s: %w", EnvTracesEndpoint, err)
		}
		return v, nil
	}
	v := strings.TrimSpace(getenv(EnvEndpoint))
	if v == "" {
		return "", nil
	}
	if err := checkURL(v); err != nil {
		return "", fmt.Errorf("%s: %w", EnvEndpoint, err)
	}
	return strings.TrimRight(v, "/") + "/v1/traces", nil
}

// checkURL accepts an absolute http(s) URL. The message never repeats
// the value: it may carry credentials in its userinfo.
func checkURL(v string) error {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("must be an absolute http:// or https:// URL")
	}
	return nil
}

// ParseSampler maps OTEL_TRACES_SAMPLER and its argument to a sampler.
// Empty means the SDK's default, parentbased_always_on.
func ParseSampler(name, arg string) (string, sdktrace.Sampler, error) {
	name, ratio, err := otelenv.CheckSampler(name, arg)
	if err != nil {
		return "", nil, err
	}
	var s sdktrace.Sampler
	switch name {
	case "always_on":
		s = sdktrace.AlwaysSample()
	case "always_off":
		s = sdktrace.NeverSample()
	case "traceidratio":
		s = sdktrace.TraceIDRatioBased(ratio)
	case "parentbased_always_on":
		s = sdktrace.ParentBased(sdktrace.AlwaysSample())
	case "parentbased_always_off":
		s = sdktrace.ParentBased(sdktrace.NeverSample())
	case "parentbased_traceidratio":
		s = sdktrace.ParentBased(sdktrace.TraceIDRatioBased(ratio))
	}
	return name, s, nil
}

// Options configures Setup.
type Options struct {
	// Getenv reads the OTEL_* variables.
	Getenv func(string) string
	// ServiceName is service.name when OTEL_SERVICE_NAME is unset.
	ServiceName string
	Version     string
	// Redactor is applied to every attribute, event, link and status
	// text at export; it is asked each time, so a config reload that
	// adds secrets is honoured. Nil means redact.Default().
	Redactor func() *redact.Redactor
}

// Setup builds the process's tracer provider from the environment. With
// tracing off it returns a nil provider and a shutdown that does nothing.
// The shutdown flushes what is buffered; call it before exit.
func Setup(ctx context.Context, o Options) (trace.TracerProvider, func(context.Context) error, error) {
	nothing := func(context.Context) error { return nil }
	c, err := ConfigFrom(o.Getenv, o.ServiceName)
	if err != nil || c.TracesURL == "" {
		return nil, nothing, err
	}
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(c.TracesURL))
	if err != nil {
		return nil, nothing, fmt.Errorf("telemetry: OTLP exporter: %w", err)
	}
	attrs := []attribute.KeyValue{semconv.ServiceName(c.ServiceName)}
	if o.Version != "" {
		attrs = append(attrs, semconv.ServiceVersion(o.Version))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(&redactingExporter{next: exp, redactor: o.Redactor}),
		sdktrace.WithSampler(c.Sampler),
		sdktrace.WithResource(resource.NewSchemaless(attrs...)),
	)
	return tp, tp.Shutdown, nil
}

// Describe is the one log line saying what Setup decided.
func Describe(getenv func(string) string, defaultService string) []any {
	c, err := ConfigFrom(getenv, defaultService)
	switch {
	case err != nil:
		return []any{"traces", "off", "error", err.Error()}
	case c.TracesURL == "":
		return []any{"traces", "off"}
	}
	return []any{"traces", "otlp", "service", c.ServiceName, "sampler", c.SamplerName}
}
