// Package otlpdouble is a stand-in OpenTelemetry collector: an HTTP server
// on 127.0.0.1 that accepts OTLP/HTTP trace exports (POST /v1/traces,
// protobuf, optionally gzip), decodes them with the OTLP protobuf types
// and keeps every span, so tests can check what the real exporter sent.
package otlpdouble

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span with the attributes of its resource.
type Span struct {
	*tracepb.Span
	Service  string            // the resource's service.name
	Resource map[string]string // the resource's attributes, as text
}

// TraceID is the trace id in hex, as trace viewers show it.
func (s Span) TraceID() string { return hex.EncodeToString(s.GetTraceId()) }

// SpanID is the span id in hex.
func (s Span) SpanID() string { return hex.EncodeToString(s.GetSpanId()) }

// ParentID is the parent span's id in hex, "" for a root span.
func (s Span) ParentID() string { return hex.EncodeToString(s.GetParentSpanId()) }

// Attr is the attribute key's value as text ("" when absent).
func (s Span) Attr(key string) string {
	for _, kv := range s.GetAttributes() {
		if kv.GetKey() == key {
			return text(kv.GetValue())
		}
	}
	return ""
}

// Attrs is every attribute as text.
func (s Span) Attrs() map[string]string {
	m := map[string]string{}
	for _, kv := range s.GetAttributes() {
		m[kv.GetKey()] = text(kv.GetValue())
	}
	return m
}

// Texts is everything textual the span carries: its name, every
// attribute value (its own, its events', its links', its resource's) and
// its status message. A test scans them for what must not leak.
func (s Span) Texts() []string {
	out := []string{s.GetName(), s.GetStatus().GetMessage()}
	add := func(kvs []*commonpb.KeyValue) {
		for _, kv := range kvs {
			out = append(out, kv.GetKey(), text(kv.GetValue()))
		}
	}
	add(s.GetAttributes())
	for _, ev := range s.GetEvents() {
		out = append(out, ev.GetName())
		add(ev.GetAttributes())
	}
	for _, l := range s.GetLinks() {
		add(l.GetAttributes())
	}
	for k, v := range s.Resource {
		out = append(out, k, v)
	}
	return out
}

func text(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue)
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	case nil:
		return ""
	}
	// Arrays, maps, bytes: protobuf's own text form.
	return v.String()
}

// Server is the running double.
type Server struct {
	URL string // base URL: OTEL_EXPORTER_OTLP_ENDPOINT

	mu       sync.Mutex
	requests int
	spans    []Span
	errs     []string
}

// New starts a double on 127.0.0.1, closed when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", s.export)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *Server) export(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	s.mu.Unlock()
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			s.fail(w, "gzip: "+err.Error())
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		s.fail(w, "read: "+err.Error())
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		s.fail(w, "content type "+ct)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		s.fail(w, "decode: "+err.Error())
		return
	}
	var got []Span
	for _, rs := range req.GetResourceSpans() {
		res := map[string]string{}
		for _, kv := range rs.GetResource().GetAttributes() {
			res[kv.GetKey()] = text(kv.GetValue())
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				got = append(got, Span{Span: sp, Service: res["service.name"], Resource: res})
			}
		}
	}
	s.mu.Lock()
	s.spans = append(s.spans, got...)
	s.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (s *Server) fail(w http.ResponseWriter, msg string) {
	s.mu.Lock()
	s.errs = append(s.errs, msg)
	s.mu.Unlock()
	http.Error(w, msg, http.StatusBadRequest)
}

// Requests is how many exports arrived, decodable or not.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Spans is every span received so far, in arrival order.
func (s *Server) Spans() []Span {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Span(nil), s.spans...)
}

// Errors lists the exports the double refused and why.
func (s *Server) Errors() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.errs...)
}
