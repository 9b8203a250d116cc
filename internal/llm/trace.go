package llm

import (
	"context"
	"errors"
	"net"
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/garraia/garra/internal/errkinds"
)

// The error types of a traced model call: Garra's own kinds for it.
const (
	errorTypeTimeout  = string(errkinds.Timeout)
	errorTypeProvider = string(errkinds.ProviderError)
)

// Traced wraps p so that each Complete is one CLIENT span of the
// OpenTelemetry GenAI conventions ("chat <model>": provider, requested
// and answering model, token usage, error type). It records no prompt,
// answer or tool argument: only names and counts. baseURL gives
// server.address; its userinfo, path and query are never recorded.
func Traced(p Provider, tp trace.TracerProvider, baseURL string) Provider {
	t := &traced{next: p, tracer: tp.Tracer("github.com/garraia/garra/internal/llm")}
	if u, err := url.Parse(baseURL); err == nil && u.Host != "" {
		t.server = []attribute.KeyValue{semconv.ServerAddress(u.Hostname())}
		if port, err := strconv.Atoi(u.Port()); err == nil {
			t.server = append(t.server, semconv.ServerPort(port))
		} else if _, _, err := net.SplitHostPort(u.Host); err != nil {
			t.server = append(t.server, semconv.ServerPort(map[string]int{"http": 80, "https": 443}[u.Scheme]))
		}
	}
	return t
}

type traced struct {
	next   Provider
	tracer trace.Tracer
	server []attribute.KeyValue
}

func (t *traced) Kind() Kind { return t.next.Kind() }

func (t *traced) Complete(ctx context.Context, req Request) (*Response, error) {
	attrs := append([]attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		semconv.GenAIProviderNameKey.String(string(t.next.Kind())),
		semconv.GenAIRequestModel(req.Model),
		semconv.GenAIRequestMaxTokens(int(maxTokens(req))),
	}, t.server...)
	ctx, span := t.tracer.Start(ctx, "chat "+req.Model, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	defer span.End()
	resp, err := t.next.Complete(ctx, req)
	if err != nil {
		kind := errorTypeProvider
		if errors.Is(err, context.DeadlineExceeded) {
			kind = errorTypeTimeout
		}
		var pe *ProviderError
		if errors.As(err, &pe) && pe.StatusCode != 0 {
			span.SetAttributes(semconv.HTTPResponseStatusCode(pe.StatusCode))
		}
		span.SetAttributes(semconv.ErrorTypeKey.String(kind))
		span.SetStatus(codes.Error, kind)
		return resp, err
	}
	span.SetAttributes(
		semconv.GenAIUsageInputTokens(int(resp.Usage.InputTokens)),
		semconv.GenAIUsageOutputTokens(int(resp.Usage.OutputTokens)),
	)
	if resp.ResponseModel != "" {
		span.SetAttributes(semconv.GenAIResponseModel(resp.ResponseModel))
	}
	return resp, nil
}
