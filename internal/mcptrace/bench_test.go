package mcptrace_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/garraia/garra/internal/mcptrace"
)

// BenchmarkServerMiddleware: the cost of the MCP server span on one
// tools/call, in process, without the network: off (tracing unset, so no
// middleware at all), sampled (a span per call, batched to an exporter
// that drops them) and unsampled (OTEL_TRACES_SAMPLER=always_off).
func BenchmarkServerMiddleware(b *testing.B) {
	handler := func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return &mcp.CallToolResult{}, nil
	}
	req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "garra_status"}, Extra: &mcp.RequestExtra{}}
	for _, row := range []struct {
		name    string
		sampler sdktrace.Sampler // nil = tracing off
	}{
		{"off", nil},
		{"sampled", sdktrace.AlwaysSample()},
		{"unsampled", sdktrace.NeverSample()},
	} {
		b.Run(row.name, func(b *testing.B) {
			h := mcp.MethodHandler(handler)
			if row.sampler != nil {
				tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(row.sampler), sdktrace.WithBatcher(tracetest.NewNoopExporter()))
				defer func() { _ = tp.Shutdown(context.Background()) }()
				h = mcptrace.ServerMiddleware(tp, mcptrace.TransportTCP)(h)
			}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h(ctx, "tools/call", req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
