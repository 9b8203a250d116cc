package redact

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
)

// NewHandler wraps h so that every record is redacted by r before h sees
// it: the message, attribute keys, and every string-valued attribute,
// recursively inside groups and in attributes added with WithAttrs. An
// attribute whose key names a credential (password, api_key, x-api-key,
// token, Authorization… as in key=value text) loses its whole value,
// whatever it looks like; a known Authorization scheme is kept. Values
// that become strings when logged are redacted as strings: an error is
// replaced by its redacted Error() text and a fmt.Stringer by its redacted
// String(). Other non-scalar values (structs, maps, slices) are rendered as
// JSON, redacted, and passed on as json.RawMessage, so that a config
// struct with an APIKey field cannot slip through; numbers, booleans,
// times and durations pass unchanged. LogValuer values are resolved first.
// A nil r means Default().
func NewHandler(h slog.Handler, r *Redactor) slog.Handler {
	if r == nil {
		r = Default()
	}
	return &handler{h: h, r: r}
}

type handler struct {
	h slog.Handler
	r *Redactor
}

func (x *handler) Enabled(ctx context.Context, l slog.Level) bool {
	return x.h.Enabled(ctx, l)
}

func (x *handler) Handle(ctx context.Context, rec slog.Record) error {
	out := slog.NewRecord(rec.Time, rec.Level, x.r.String(rec.Message), rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(x.attr(a))
		return true
	})
	return x.h.Handle(ctx, out)
}

func (x *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	red := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		red[i] = x.attr(a)
	}
	return &handler{h: x.h.WithAttrs(red), r: x.r}
}

func (x *handler) WithGroup(name string) slog.Handler {
	return &handler{h: x.h.WithGroup(x.r.String(name)), r: x.r}
}

func (x *handler) attr(a slog.Attr) slog.Attr {
	if a.Equal(slog.Attr{}) {
		return a // handlers drop empty attributes; keep it recognisable
	}
	a.Key = x.r.String(a.Key)
	v := a.Value.Resolve()
	kind, keyed := keyKind(0), false
	if a.Key != "" {
		kind, keyed = credentialKey(a.Key)
	}
	switch v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(x.r.Attr(a.Key, v.String()))
	case slog.KindGroup:
		group := v.Group()
		red := make([]slog.Attr, len(group))
		for i, g := range group {
			red[i] = x.attr(g)
		}
		a.Value = slog.GroupValue(red...)
	case slog.KindAny:
		a.Value = x.any(v.Any())
		if keyed && a.Value.Kind() == slog.KindString {
			a.Value = slog.StringValue(redactValue(a.Value.String(), kind))
		} else if keyed && v.Any() != nil {
			a.Value = slog.StringValue(Placeholder)
		}
	default:
		a.Value = v
	}
	return a
}

func (x *handler) any(v any) slog.Value {
	switch v := v.(type) {
	case nil:
		return slog.AnyValue(nil)
	case error:
		return slog.StringValue(x.r.String(safeString(v.Error)))
	case fmt.Stringer:
		return slog.StringValue(x.r.String(safeString(v.String)))
	case []byte:
		return slog.StringValue(x.r.String(string(v)))
	}
	// A named string type (an error kind) is a string: through JSON it
	// would be logged with its quotes, and quoted again by the handler.
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.String {
		return slog.StringValue(x.r.String(rv.String()))
	}
	if b, err := json.Marshal(v); err == nil {
		if red := x.r.Bytes(b); json.Valid(red) {
			return slog.AnyValue(json.RawMessage(red))
		}
	}
	return slog.StringValue(x.r.String(fmt.Sprintf("%+v", v)))
}

// safeString calls f, turning a panic (typically a method called on a nil
// pointer) into text, as slog's own handlers do.
func safeString(f func() string) (s string) {
	defer func() {
		if p := recover(); p != nil {
			s = fmt.Sprintf("!PANIC: %v", p)
		}
	}()
	return f()
}

// Attr is the redaction of one string-valued attribute, as NewHandler
// applies it to a log record and the trace exporter to a span: a value
// whose key names a credential is redacted whole, any other by r's rules.
func (r *Redactor) Attr(key, value string) string {
	if key != "" {
		if kind, keyed := credentialKey(key); keyed {
			return redactValue(value, kind)
		}
	}
	return r.String(value)
}

// redactValue redacts the whole of v, the value of an attribute whose key
// names a credential (password, api_key, Authorization…); for an
// Authorization value a known scheme is kept: "Basic [REDACTED]".
func redactValue(v string, kind keyKind) string {
	if v == "" || v == Placeholder {
		return v
	}
	if kind == kindAuth {
		if a := afterScheme(v, 0, len(v)); a > 0 {
			if v[a:] == Placeholder {
				return v
			}
			return v[:a] + Placeholder
		}
	}
	return Placeholder
}
