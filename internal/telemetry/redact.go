package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/garraia/garra/internal/redact"
)

// redactingExporter passes every span through the redaction the log lines
// get before the OTLP exporter sees it. Doing it here, at the one exit,
// rather than where attributes are set means no instrumented seam can
// forget it.
type redactingExporter struct {
	next     sdktrace.SpanExporter
	redactor func() *redact.Redactor
}

func (e *redactingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	r := redact.Default()
	if e.redactor != nil {
		if cur := e.redactor(); cur != nil {
			r = cur
		}
	}
	out := make([]sdktrace.ReadOnlySpan, len(spans))
	for i, s := range spans {
		out[i] = redactedSpan{ReadOnlySpan: s, r: r}
	}
	return e.next.ExportSpans(ctx, out)
}

func (e *redactingExporter) Shutdown(ctx context.Context) error { return e.next.Shutdown(ctx) }

// redactedSpan is a finished span whose texts are read through r.
type redactedSpan struct {
	sdktrace.ReadOnlySpan
	r *redact.Redactor
}

func (s redactedSpan) Name() string { return s.r.String(s.ReadOnlySpan.Name()) }

func (s redactedSpan) Attributes() []attribute.KeyValue {
	return redactAttrs(s.r, s.ReadOnlySpan.Attributes())
}

func (s redactedSpan) Events() []sdktrace.Event {
	evs := s.ReadOnlySpan.Events()
	out := make([]sdktrace.Event, len(evs))
	for i, ev := range evs {
		ev.Name = s.r.String(ev.Name)
		ev.Attributes = redactAttrs(s.r, ev.Attributes)
		out[i] = ev
	}
	return out
}

func (s redactedSpan) Links() []sdktrace.Link {
	ls := s.ReadOnlySpan.Links()
	out := make([]sdktrace.Link, len(ls))
	for i, l := range ls {
		l.Attributes = redactAttrs(s.r, l.Attributes)
		out[i] = l
	}
	return out
}

func (s redactedSpan) Status() sdktrace.Status {
	st := s.ReadOnlySpan.Status()
	st.Description = s.r.String(st.Description)
	return st
}

func (s redactedSpan) Resource() *resource.Resource {
	res := s.ReadOnlySpan.Resource()
	if res == nil {
		return nil
	}
	return resource.NewWithAttributes(res.SchemaURL(), redactAttrs(s.r, res.Attributes())...)
}

// redactAttrs redacts string and string-slice values by key and content
// (redact.Redactor.Attr); numbers and booleans carry no text.
func redactAttrs(r *redact.Redactor, kvs []attribute.KeyValue) []attribute.KeyValue {
	if len(kvs) == 0 {
		return kvs
	}
	out := make([]attribute.KeyValue, len(kvs))
	for i, kv := range kvs {
		key := string(kv.Key)
		switch kv.Value.Type() {
		case attribute.STRING:
			kv.Value = attribute.StringValue(r.Attr(key, kv.Value.AsString()))
		case attribute.STRINGSLICE:
			vs := kv.Value.AsStringSlice()
			for j, v := range vs {
				vs[j] = r.Attr(key, v)
			}
			kv.Value = attribute.StringSliceValue(vs)
		}
		out[i] = kv
	}
	return out
}
