package controllers

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

func TestPolicyStamp(t *testing.T) {
	ob := func(uid string, gen int64, ann map[string]string) garrav1alpha1.Orchestrator {
		return garrav1alpha1.Orchestrator{ObjectMeta: metav1.ObjectMeta{UID: types.UID("ob-" + uid), Generation: gen, Annotations: ann}}
	}
	rotate := map[string]string{garrav1alpha1.AnnotationRotateToken: "x"}
	base := testServer()
	obs := []garrav1alpha1.Orchestrator{ob("a", 1, nil), ob("b", 4, nil)}
	want := policyStamp(base, obs)

	cases := []struct {
		name    string
		gs      func(*garrav1alpha1.GarraServer)
		obs     []garrav1alpha1.Orchestrator
		changed bool
	}{
		{name: "the same", obs: obs},
		{name: "Orchestrators in another order", obs: []garrav1alpha1.Orchestrator{obs[1], obs[0]}},
		{name: "the server's status, labels and finalizers", obs: obs, gs: func(gs *garrav1alpha1.GarraServer) {
			gs.Status.Conditions = []metav1.Condition{{Type: "Ready"}}
			gs.Labels = map[string]string{"team": "a"}
			gs.Finalizers = []string{TokenReviewFinalizer}
			gs.ResourceVersion = "99"
		}},
		{name: "another annotation on the server", obs: obs, gs: func(gs *garrav1alpha1.GarraServer) { gs.Annotations = map[string]string{"note": "x"} }},
		{name: "the server's spec", obs: obs, changed: true, gs: func(gs *garrav1alpha1.GarraServer) { gs.Generation++ }},
		{name: "a rotation asked of the server", obs: obs, changed: true, gs: func(gs *garrav1alpha1.GarraServer) { gs.Annotations = rotate }},
		{name: "an Orchestrator created", obs: append(obs[:2:2], ob("c", 1, nil)), changed: true},
		{name: "an Orchestrator deleted", obs: obs[:1], changed: true},
		{name: "an Orchestrator deleted and another created", obs: []garrav1alpha1.Orchestrator{obs[0], ob("c", 4, nil)}, changed: true},
		{name: "an Orchestrator's spec", obs: []garrav1alpha1.Orchestrator{obs[0], ob("b", 5, nil)}, changed: true},
		{name: "a rotation asked of an Orchestrator", obs: []garrav1alpha1.Orchestrator{obs[0], ob("b", 4, rotate)}, changed: true},
		{name: "an empty rotation asked of an Orchestrator", obs: []garrav1alpha1.Orchestrator{obs[0], ob("b", 4, map[string]string{garrav1alpha1.AnnotationRotateToken: ""})}, changed: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gs := base.DeepCopy()
			if tc.gs != nil {
				tc.gs(gs)
			}
			if changed := policyStamp(gs, tc.obs) != want; changed != tc.changed {
				t.Errorf("stamp changed = %v, want %v", changed, tc.changed)
			}
		})
	}
}

// changeSpec bumps gs's generation as the API server does on a spec
// change (the fake client does not).
func changeSpec(ctx context.Context, cl client.Client, gs *garrav1alpha1.GarraServer) error {
	cur := &garrav1alpha1.GarraServer{}
	if err := cl.Get(ctx, client.ObjectKeyFromObject(gs), cur); err != nil {
		return err
	}
	cur.Generation++
	return cl.Update(ctx, cur)
}

// A pass whose policy's inputs change once it has published its own stops
// at its next look: the policy is out, the later members' objects and the
// status wait for the next pass, and nothing is reported as failed. The
// same pass without the change applies everything and writes the status.
func TestPassYieldsToANewerPolicy(t *testing.T) {
	for _, change := range []bool{false, true} {
		gs := testServer()
		var applied []string
		funcs := interceptor.Funcs{
			Apply: func(ctx context.Context, cl client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
				if d, ok := obj.(*appsv1ac.DeploymentApplyConfiguration); ok {
					applied = append(applied, *d.Name)
					if change && *d.Name == sandboxName(gs, "badgood") {
						// The spec changes while the first member's
						// sandbox is written.
						if err := changeSpec(ctx, cl, gs); err != nil {
							return err
						}
					}
				}
				switch obj.(type) {
				case *corev1ac.SecretApplyConfiguration, *corev1ac.ConfigMapApplyConfiguration:
					return cl.Apply(ctx, obj, opts...)
				}
				// The fake client cannot merge the apply of a pod's
				// objects; what was asked is all this test needs.
				return nil
			},
		}
		// Each look at the clock is 20 ms later: every check may look.
		clock := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
		c, err := passOnFake(gs, funcs, func(r *GarraServerReconciler) {
			r.Now = func() time.Time { clock = clock.Add(2 * yieldCheckEvery); return clock }
		})
		if err != nil {
			t.Fatalf("change=%v: Reconcile: %v", change, err)
		}
		got := &garrav1alpha1.GarraServer{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(gs), got); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{tokensName(gs), gatewayName(gs)} {
			obj := client.Object(&corev1.Secret{})
			if name == gatewayName(gs) {
				obj = &corev1.ConfigMap{}
			}
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: gs.Namespace, Name: name}, obj); err != nil {
				t.Errorf("change=%v: the policy's %T %s: %v", change, obj, name, err)
			}
		}
		second := sandboxName(gs, "n8n-prod")
		wrote := false
		for _, n := range applied {
			wrote = wrote || n == second
		}
		if change {
			if wrote || len(got.Status.Conditions) != 0 {
				t.Errorf("after the change the pass went on: applied %q, status conditions %d", applied, len(got.Status.Conditions))
			}
			continue
		}
		if !wrote || len(got.Status.Conditions) == 0 {
			t.Errorf("without a change the pass stopped: applied %q, status conditions %d", applied, len(got.Status.Conditions))
		}
	}
}

// A newer policy that arrives while one slow write is in flight cancels
// it: the pass yields without waiting for the write to end or fail.
func TestPassYieldsDuringASlowWrite(t *testing.T) {
	gs := testServer()
	var cause error
	funcs := interceptor.Funcs{
		Apply: func(ctx context.Context, cl client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
			d, ok := obj.(*appsv1ac.DeploymentApplyConfiguration)
			if !ok {
				if _, policy := obj.(*corev1ac.SecretApplyConfiguration); policy {
					return cl.Apply(ctx, obj, opts...)
				}
				if _, policy := obj.(*corev1ac.ConfigMapApplyConfiguration); policy {
					return cl.Apply(ctx, obj, opts...)
				}
				return nil
			}
			if *d.Name != sandboxName(gs, "badgood") {
				return nil
			}
			if err := changeSpec(ctx, cl, gs); err != nil {
				return err
			}
			// A write the API server is slow to answer.
			select {
			case <-ctx.Done():
				cause = context.Cause(ctx)
				return ctx.Err()
			case <-time.After(5 * time.Second):
				return nil
			}
		},
	}
	rec := tracetest.NewSpanRecorder()
	start := time.Now()
	c, err := passOnFake(gs, funcs, WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))))
	if err != nil {
		t.Fatalf("Reconcile: %v (a yield is no failure)", err)
	}
	root, steps := passTree(t, rec.Ended())
	if got := attrOf(root, AttrOutcome).AsString(); got != "yielded" {
		t.Errorf("%s = %q, want yielded", AttrOutcome, got)
	}
	if slices.Contains(steps, "write status") {
		t.Errorf("a yielded pass has a write status span: %q", steps)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Errorf("the pass took %s: it waited for the slow write", took)
	}
	if !errors.Is(cause, errYielded) {
		t.Errorf("the slow write's context ended with %v, want %v", cause, errYielded)
	}
	got := &garrav1alpha1.GarraServer{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(gs), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Status.Conditions) != 0 {
		t.Errorf("a yielded pass wrote the status: %v", got.Status.Conditions)
	}
}
