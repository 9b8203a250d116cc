package controllers

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// TestReconcileWritesStatusWhenAStepFails: a write the API server refuses
// must not leave the conditions of an earlier, healthy pass in place. The
// reconcile returns the error (so it is retried) and Ready says which step
// failed.
func TestReconcileWritesStatusWhenAStepFails(t *testing.T) {
	gs := testServer()
	gs.Status.Conditions = []metav1.Condition{{Type: garrav1alpha1.ConditionReady, Status: "True", Reason: garrav1alpha1.ReasonReady, Message: "stale"}}
	c, err := passOnFake(gs, refuseApplies(), nil)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("Reconcile error = %v, want the API server's Forbidden", err)
	}
	got := &garrav1alpha1.GarraServer{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(gs), got); err != nil {
		t.Fatal(err)
	}
	ready := meta.FindStatusCondition(got.Status.Conditions, garrav1alpha1.ConditionReady)
	if ready == nil || ready.Status != "False" || ready.Reason != garrav1alpha1.ReasonApplyFailed {
		t.Fatalf("Ready = %+v, want False/ApplyFailed", ready)
	}
	if !strings.HasPrefix(ready.Message, "apply policy: ") || !strings.Contains(ready.Message, "forbidden") {
		t.Errorf("Ready message %q does not name the step and the error", ready.Message)
	}
	if got.Status.ObservedGeneration != gs.Generation {
		t.Errorf("observedGeneration = %d, want %d", got.Status.ObservedGeneration, gs.Generation)
	}
}

// passOnFake reconciles gs once on a fake API server holding the Secrets
// testServer refers to; funcs intercept the API calls and configure, when
// set, adjusts the reconciler first.
func passOnFake(gs *garrav1alpha1.GarraServer, funcs interceptor.Funcs, configure func(*GarraServerReconciler)) (client.Client, error) {
	objs := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "llm-keys"}, Data: map[string][]byte{"openrouter": []byte("sk-test")}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "agents", Name: "n8n-token"}, Data: map[string][]byte{"token": []byte("n8n-secret-token")}},
		gs,
	}
	c := fake.NewClientBuilder().WithScheme(testScheme).WithObjects(objs...).
		WithStatusSubresource(&garrav1alpha1.GarraServer{}).WithInterceptorFuncs(funcs).
		WithIndex(&garrav1alpha1.Orchestrator{}, serverRefIndex, serverRefOf).Build()
	r := &GarraServerReconciler{Client: c, APIReader: c, GarraImage: "garra:t", SandboxImage: "sandbox:t", Rand: bytes.NewReader(bytes.Repeat([]byte{7}, 4096))}
	if configure != nil {
		configure(r)
	}
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(gs)})
	return c, err
}

// refuseApplies makes every server-side apply fail with the API server's
// Forbidden, as a manager without RBAC for Deployments would see.
func refuseApplies() interceptor.Funcs {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "team-a-gateway", errors.New("denied by a test"))
	return interceptor.Funcs{
		Apply: func(context.Context, client.WithWatch, runtime.ApplyConfiguration, ...client.ApplyOption) error {
			return forbidden
		},
	}
}
