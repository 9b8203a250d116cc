package controllers

import (
	"context"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// tracedPass reconciles testServer once on a fake API server with a span
// recorder installed; funcs intercept the API calls.
func tracedPass(t *testing.T, gs *garrav1alpha1.GarraServer, funcs interceptor.Funcs) ([]sdktrace.ReadOnlySpan, error) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	_, err := passOnFake(gs, funcs, WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))))
	return rec.Ended(), err
}

// passTree checks that spans are one root (SpanReconcile, a new trace)
// and children of it only, and returns the root and the children's names
// in the order they ended.
func passTree(t *testing.T, spans []sdktrace.ReadOnlySpan) (sdktrace.ReadOnlySpan, []string) {
	t.Helper()
	var root sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == SpanReconcile {
			if root != nil {
				t.Fatalf("two %q spans in one pass", SpanReconcile)
			}
			root = s
		}
	}
	if root == nil {
		t.Fatalf("no %q span among %d", SpanReconcile, len(spans))
	}
	if root.Parent().IsValid() {
		t.Errorf("the pass's span has a parent %v; want a root", root.Parent().SpanID())
	}
	var names []string
	for _, s := range spans {
		if s == root {
			continue
		}
		if s.Parent().SpanID() != root.SpanContext().SpanID() || s.SpanContext().TraceID() != root.SpanContext().TraceID() {
			t.Errorf("span %q is not a child of the pass", s.Name())
		}
		names = append(names, s.Name())
	}
	return root, names
}

func attrOf(s sdktrace.ReadOnlySpan, k attribute.Key) attribute.Value {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}

func TestReconcileSpansOfAFailingPass(t *testing.T) {
	spans, err := tracedPass(t, testServer(), refuseApplies())
	if !apierrors.IsForbidden(err) {
		t.Fatalf("Reconcile error = %v, want Forbidden", err)
	}
	root, names := passTree(t, spans)
	want := []string{"list orchestrators", "validate spec", "rotate tokens", "generate secrets", "read secrets", "validate tokens", "apply policy", "write status"}
	if !slices.Equal(names, want) {
		t.Errorf("step spans = %q, want %q (nothing after the failed step but the status write)", names, want)
	}
	for _, s := range spans {
		wantErr := s.Name() == "apply policy" || s == root
		if got := s.Status().Code == codes.Error; got != wantErr {
			t.Errorf("span %q: error status %v, want %v (%q)", s.Name(), got, wantErr, s.Status().Description)
		}
	}
	if got := attrOf(root, AttrOutcome).AsString(); got != "failed" {
		t.Errorf("%s = %q, want failed", AttrOutcome, got)
	}
	if got := attrOf(root, "k8s.namespace.name").AsString(); got != "agents" {
		t.Errorf("k8s.namespace.name = %q, want agents", got)
	}
	if got := attrOf(root, AttrGarraServer).AsString(); got != "team-a" {
		t.Errorf("%s = %q, want team-a", AttrGarraServer, got)
	}
}

func TestReconcileSpansOfAnInvalidSpec(t *testing.T) {
	gs := testServer()
	gs.Spec.Gateway.Storage.Size = resource.Quantity{}
	spans, err := tracedPass(t, gs, interceptor.Funcs{})
	if err != nil {
		t.Fatalf("Reconcile: %v (an invalid spec is reported in status, not retried)", err)
	}
	root, names := passTree(t, spans)
	if want := []string{"list orchestrators", "validate spec", "write status"}; !slices.Equal(names, want) {
		t.Errorf("step spans = %q, want %q", names, want)
	}
	if got := attrOf(root, AttrOutcome).AsString(); got != "invalid" || root.Status().Code != codes.Error {
		t.Errorf("outcome %q, status %v; want invalid, Error", got, root.Status())
	}
}

func TestReconcileMakesNoSpanWithoutATracer(t *testing.T) {
	r := &GarraServerReconciler{}
	WithTracerProvider(nil)(r)
	if r.Tracer != nil {
		t.Fatal("a nil provider installed a tracer")
	}
	_, span := r.startPass(context.Background(), testServer())
	if span.SpanContext().IsValid() {
		t.Error("a pass without a tracer made a recording span")
	}
}

// stepCounts reads, from the registry the manager serves, how many times
// each step of a pass has been timed.
func stepCounts(t *testing.T) map[string]uint64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, f := range families {
		if f.GetName() != MetricStepSeconds {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "step" {
					out[l.GetValue()] += m.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return out
}

func TestReconcileTimesEachStepItRan(t *testing.T) {
	before := stepCounts(t)
	if _, err := tracedPass(t, testServer(), refuseApplies()); !apierrors.IsForbidden(err) {
		t.Fatalf("Reconcile error = %v, want Forbidden", err)
	}
	after := stepCounts(t)
	ran := []string{"list orchestrators", "validate spec", "rotate tokens", "generate secrets", "read secrets", "validate tokens", "apply policy", "write status"}
	for _, step := range ran {
		if after[step]-before[step] != 1 {
			t.Errorf("%s{step=%q} counted %d more, want 1", MetricStepSeconds, step, after[step]-before[step])
		}
	}
	if n := after["apply gateway"] - before["apply gateway"]; n != 0 {
		t.Errorf("a step the failed pass never reached was timed %d times", n)
	}
}
