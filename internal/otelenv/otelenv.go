// Package otelenv names the standard OpenTelemetry variables Garra reads
// and checks their values, and names Garra's instrumentation scope. It
// imports nothing but the standard library, so that the operator can
// render and validate them without linking the tracing SDK
// (internal/telemetry does the tracing).
package otelenv

import (
	"fmt"
	"strconv"
	"strings"
)

// ScopeName is the instrumentation scope of every span Garra makes.
const ScopeName = "github.com/garraia/garra"

// The standard variables.
const (
	Endpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	TracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	ServiceName    = "OTEL_SERVICE_NAME"
	Sampler        = "OTEL_TRACES_SAMPLER"
	SamplerArg     = "OTEL_TRACES_SAMPLER_ARG"
	SDKDisabled    = "OTEL_SDK_DISABLED"
	TracesExporter = "OTEL_TRACES_EXPORTER"
	Protocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	TracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// HTTPProtobuf is the one OTLP protocol Garra exports with.
const HTTPProtobuf = "http/protobuf"

// DefaultSampler is the sampler when OTEL_TRACES_SAMPLER is unset.
const DefaultSampler = "parentbased_always_on"

// Samplers are the OTEL_TRACES_SAMPLER values supported.
var Samplers = []string{"always_on", "always_off", "traceidratio", "parentbased_always_on", "parentbased_always_off", "parentbased_traceidratio"}

// CheckSampler validates a sampler name and its argument: the name in
// force (DefaultSampler for ""), and the ratio (1 when arg is empty; only
// the ratio samplers use it). Errors name the variable.
func CheckSampler(name, arg string) (string, float64, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		name = DefaultSampler
	}
	known := false
	for _, s := range Samplers {
		known = known || s == name
	}
	if !known {
		return "", 0, fmt.Errorf("%s: %q is not supported (want one of %s)", Sampler, name, strings.Join(Samplers, ", "))
	}
	ratio := 1.0
	if a := strings.TrimSpace(arg); a != "" && strings.HasSuffix(name, "traceidratio") {
		f, err := strconv.ParseFloat(a, 64)
		if err != nil || f < 0 || f > 1 {
			return "", 0, fmt.Errorf("%s: %q is not a ratio in [0, 1]", SamplerArg, arg)
		}
		ratio = f
	}
	return name, ratio, nil
}
