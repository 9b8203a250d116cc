// Package mcptrace traces MCP messages as the OpenTelemetry MCP
// conventions say: a SERVER span per message a garra server receives (the
// stdio server, the gateway, the sandbox), a CLIENT span per call the
// gateway makes to a sandbox, and the trace context carried between them.
// It uses the OpenTelemetry API only; which provider (if any) records the
// spans is the process's choice (internal/telemetry).
package mcptrace

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/otelenv"
)

// Propagator carries trace context between Garra's processes: W3C
// traceparent/tracestate only, so nothing else a client sends (baggage)
// is forwarded.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Network transports, as network.transport says them.
const (
	TransportTCP  = "tcp"  // Streamable HTTP
	TransportPipe = "pipe" // stdio
)

// ErrorTypeToolError is error.type of a tools/call whose result has
// isError and whose server named no more precise kind.
const ErrorTypeToolError = "tool_error"

// ServerMiddleware makes one SERVER span per MCP message received, named
// and attributed as the OpenTelemetry MCP conventions say ("tools/call
// bash", mcp.method.name, gen_ai.tool.name, mcp.session.id, error.type).
// Its parent is the trace context the client sent: the traceparent header
// of the HTTP request, else params._meta.traceparent, else whatever ctx
// holds. Install it last, so that it is outermost. tp must not be nil:
// with tracing off, install nothing.
func ServerMiddleware(tp trace.TracerProvider, transport string) mcp.Middleware {
	tracer := tp.Tracer(otelenv.ScopeName)
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			ctx = remoteParent(ctx, req)
			name, attrs := describe(method, req)
			attrs = append(attrs, semconv.NetworkTransportKey.String(transport))
			ctx, span := tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
			defer span.End()
			st := &callState{}
			res, err := next(context.WithValue(ctx, stateKey{}, st), method, req)
			endCall(span, st.kind, res, err)
			return res, err
		}
	}
}

// StartClient starts the CLIENT span of one MCP request Garra sends (the
// gateway calling a sandbox); End it with EndClient.
func StartClient(ctx context.Context, tracer trace.Tracer, method, tool string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	name := method
	attrs = append(attrs, semconv.McpMethodNameKey.String(method))
	if tool != "" {
		name += " " + tool
		attrs = append(attrs, semconv.GenAIToolName(tool), semconv.GenAIOperationNameExecuteTool)
	}
	return tracer.Start(ctx, name, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// EndClient records how a client call ended and ends its span: kind is
// the error type when the call failed ("" when it did not), toolError
// marks a result with isError.
func EndClient(span trace.Span, kind string, toolError bool) {
	if kind == "" && toolError {
		kind = ErrorTypeToolError
	}
	if kind != "" {
		span.SetAttributes(semconv.ErrorTypeKey.String(kind))
		span.SetStatus(codes.Error, kind)
	}
	span.End()
}

// Inject writes ctx's trace context into h (W3C traceparent).
func Inject(ctx context.Context, h http.Header) {
	Propagator.Inject(ctx, propagation.HeaderCarrier(h))
}

// RecordErrorKind names the Garra error kind (docs/errors.md) of the
// request being served, which becomes its span's error.type. Outside a
// traced request it does nothing.
func RecordErrorKind(ctx context.Context, kind errkinds.Kind) {
	if st, ok := ctx.Value(stateKey{}).(*callState); ok && kind != "" {
		st.kind = string(kind)
	}
}

type stateKey struct{}

// callState is what a handler tells the middleware about its outcome.
type callState struct{ kind string }

// remoteParent is ctx with the trace context the client sent, if any.
func remoteParent(ctx context.Context, req mcp.Request) context.Context {
	if extra := req.GetExtra(); extra != nil && extra.Header != nil {
		if sc := trace.SpanContextFromContext(Propagator.Extract(ctx, propagation.HeaderCarrier(extra.Header))); sc.IsValid() {
			return trace.ContextWithRemoteSpanContext(ctx, sc)
		}
	}
	if meta := metaOf(req); meta != nil {
		carrier := propagation.MapCarrier{}
		for _, k := range Propagator.Fields() {
			if v, ok := meta[k].(string); ok {
				carrier[k] = v
			}
		}
		if sc := trace.SpanContextFromContext(Propagator.Extract(ctx, carrier)); sc.IsValid() {
			return trace.ContextWithRemoteSpanContext(ctx, sc)
		}
	}
	return ctx
}

// metaOf is the request's params._meta, or nil (also for absent params,
// which the SDK may hand over as a typed nil).
func metaOf(req mcp.Request) map[string]any {
	p := req.GetParams()
	if p == nil {
		return nil
	}
	if v := reflect.ValueOf(p); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return p.GetMeta()
}

// describe is the span name and starting attributes of one request.
func describe(method string, req mcp.Request) (string, []attribute.KeyValue) {
	name := method
	attrs := []attribute.KeyValue{semconv.McpMethodNameKey.String(method)}
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		if r.Params != nil && r.Params.Name != "" {
			name += " " + r.Params.Name
			attrs = append(attrs, semconv.GenAIToolName(r.Params.Name), semconv.GenAIOperationNameExecuteTool)
		}
	case *mcp.GetPromptRequest:
		if r.Params != nil && r.Params.Name != "" {
			name += " " + r.Params.Name
			attrs = append(attrs, semconv.GenAIPromptName(r.Params.Name))
		}
	case *mcp.ReadResourceRequest:
		if r.Params != nil {
			attrs = append(attrs, semconv.McpResourceURI(r.Params.URI))
		}
	}
	if ss, ok := req.GetSession().(*mcp.ServerSession); ok && ss != nil {
		if id := ss.ID(); id != "" {
			attrs = append(attrs, semconv.McpSessionID(id))
		}
	}
	if v, ok := req.(interface{ ProtocolVersion() string }); ok {
		if pv := v.ProtocolVersion(); pv != "" {
			attrs = append(attrs, semconv.McpProtocolVersion(pv))
		}
	}
	return name, attrs
}

// endCall sets error.type: the kind the handler recorded, else the
// JSON-RPC error code, else tool_error for an isError result.
func endCall(span trace.Span, kind string, res mcp.Result, err error) {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		code := strconv.FormatInt(werr.Code, 10)
		span.SetAttributes(semconv.RPCResponseStatusCode(code))
		if kind == "" {
			kind = code
		}
	} else if err != nil && kind == "" {
		kind = "_OTHER"
	}
	if ct, ok := res.(*mcp.CallToolResult); ok && ct != nil && ct.IsError && kind == "" {
		kind = ErrorTypeToolError
	}
	if kind != "" {
		span.SetAttributes(semconv.ErrorTypeKey.String(kind))
		span.SetStatus(codes.Error, kind)
	}
}
