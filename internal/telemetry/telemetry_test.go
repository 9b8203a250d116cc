package telemetry_test

import (
	"context"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/garraia/garra/internal/redact"
	"github.com/garraia/garra/internal/telemetry"
	"github.com/garraia/garra/test/fakes/otlpdouble"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestConfigFrom(t *testing.T) {
	for _, tt := range []struct {
		name    string
		env     map[string]string
		url     string // "" = off
		service string
		sampler string
		err     string // substring; "" = no error
	}{
		{name: "nothing set", env: nil},
		{name: "service and sampler alone export nothing", env: map[string]string{"OTEL_SERVICE_NAME": "x", "OTEL_TRACES_SAMPLER": "always_on"}},
		{name: "base endpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
			url: "http://collector:4318/v1/traces", service: "garra-gateway", sampler: "parentbased_always_on"},
		{name: "base endpoint with a path and slash", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://otel.example/otlp/"},
			url: "https://otel.example/otlp/v1/traces", service: "garra-gateway", sampler: "parentbased_always_on"},
		{name: "the traces endpoint wins, as given", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318",
			"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:4318/custom", "OTEL_SERVICE_NAME": "team-gw", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"},
			url: "http://b:4318/custom", service: "team-gw", sampler: "traceidratio"},
		{name: "SDK disabled", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_SDK_DISABLED": "true"}},
		{name: "exporter none", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_TRACES_EXPORTER": "none"}},
		{name: "exporter unknown", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_TRACES_EXPORTER": "zipkin"},
			err: "OTEL_TRACES_EXPORTER"},
		{name: "protocol http/protobuf", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
			url: "http://a:4318/v1/traces", service: "garra-gateway", sampler: "parentbased_always_on"},
		{name: "protocol grpc", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			err: "OTEL_EXPORTER_OTLP_PROTOCOL"},
		{name: "traces protocol wins", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"},
			err: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"},
		{name: "protocol without an endpoint exports nothing", env: map[string]string{"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}},
		{name: "endpoint not a URL", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, err: "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{name: "traces endpoint with another scheme", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "grpc://user:hunter2hunter2@c:4317"},
			err: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"},
		{name: "unknown sampler", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_TRACES_SAMPLER": "sometimes"},
			err: "OTEL_TRACES_SAMPLER:"},
		{name: "ratio out of range", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://a:4318", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"},
			err: "OTEL_TRACES_SAMPLER_ARG"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := telemetry.ConfigFrom(envOf(tt.env), "garra-gateway")
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one naming %s", err, tt.err)
				}
				if strings.Contains(err.Error(), "hunter2") {
					t.Fatalf("the error repeats the URL's credentials: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.TracesURL != tt.url || c.ServiceName != tt.service || c.SamplerName != tt.sampler {
				t.Fatalf("got %q %q %q", c.TracesURL, c.ServiceName, c.SamplerName)
			}
		})
	}
}

// Setup with nothing set is no provider at all, so no seam is traced.
func TestSetupOffIsNil(t *testing.T) {
	tp, shutdown, err := telemetry.Setup(context.Background(), telemetry.Options{Getenv: envOf(nil), ServiceName: "garra-gateway"})
	if err != nil || tp != nil {
		t.Fatalf("tp %v err %v", tp, err)
	}
	if err := shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func setup(t *testing.T, otlp *otlpdouble.Server, extra map[string]string, red *redact.Redactor) (trace.TracerProvider, func()) {
	t.Helper()
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": otlp.URL}
	for k, v := range extra {
		env[k] = v
	}
	tp, shutdown, err := telemetry.Setup(context.Background(), telemetry.Options{Getenv: envOf(env), ServiceName: "svc",
		Redactor: func() *redact.Redactor { return red }})
	if err != nil || tp == nil {
		t.Fatalf("tp %v err %v", tp, err)
	}
	return tp, func() {
		if err := shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// Every text a span carries reaches the collector redacted: attribute
// values by content and by key, event and link attributes, the status.
func TestExportRedactsEveryText(t *testing.T) {
	const held = "held-secret-value-0123456789" // a value this process holds
	const shaped = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
	otlp := otlpdouble.New(t)
	tp, flush := setup(t, otlp, nil, redact.Default().WithSecrets(held))
	tracer := tp.Tracer("test")
	_, span := tracer.Start(context.Background(), "op", trace.WithAttributes(
		attribute.String("gen_ai.request.model", "model-"+held),
		attribute.String("note", "key "+shaped),
		attribute.String("client.api_key", "short"),
		attribute.StringSlice("list", []string{"ok", held}),
		attribute.Int("count", 3),
	))
	span.AddEvent("ev", trace.WithAttributes(attribute.String("detail", held)))
	span.SetStatus(codes.Error, "failed with "+held)
	span.End()
	flush()
	spans := otlp.Spans()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	s := spans[0]
	for _, text := range s.Texts() {
		if strings.Contains(text, held) || strings.Contains(text, shaped) || strings.Contains(text, "short") {
			t.Errorf("unredacted: %q", text)
		}
	}
	if s.Attr("gen_ai.request.model") != "model-"+redact.Placeholder || s.Attr("client.api_key") != redact.Placeholder || s.Attr("count") != "3" {
		t.Fatalf("attributes: %v", s.Attrs())
	}
	if s.GetStatus().GetMessage() != "failed with "+redact.Placeholder || s.Service != "svc" {
		t.Fatalf("status %q service %q", s.GetStatus().GetMessage(), s.Service)
	}
}

// OTEL_TRACES_SAMPLER=always_off keeps the exporter but samples nothing.
func TestSamplerAlwaysOff(t *testing.T) {
	otlp := otlpdouble.New(t)
	tp, flush := setup(t, otlp, map[string]string{"OTEL_TRACES_SAMPLER": "always_off"}, nil)
	_, span := tp.Tracer("test").Start(context.Background(), "op")
	span.End()
	flush()
	if n := len(otlp.Spans()); n != 0 {
		t.Fatalf("%d spans sampled", n)
	}
}
