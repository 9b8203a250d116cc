package controllers

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

func TestSuspendDue(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		last time.Time
		idle time.Duration
		due  bool
		left time.Duration
	}{
		{"just used", now, time.Minute, false, time.Minute},
		{"half way", now.Add(-30 * time.Second), time.Minute, false, 30 * time.Second},
		{"exactly idle", now.Add(-time.Minute), time.Minute, true, 0},
		{"long idle", now.Add(-time.Hour), time.Minute, true, 0},
		{"a mark from the future (clock skew) waits", now.Add(time.Minute), time.Minute, false, 2 * time.Minute},
	} {
		due, left := suspendDue(tc.last, tc.idle, now)
		if due != tc.due || left != tc.left {
			t.Errorf("%s: due %v left %v, want %v %v", tc.name, due, left, tc.due, tc.left)
		}
	}
}

func TestLastActivity(t *testing.T) {
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	mark := time.Date(2026, 12, 4, 11, 59, 0, 0, time.UTC)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)}}
	if got := lastActivity(d); !got.Equal(created) {
		t.Errorf("no mark: %v, want the creation time", got)
	}
	d.Annotations = map[string]string{AnnotationLastCall: mark.Format(time.RFC3339Nano)}
	if got := lastActivity(d); !got.Equal(mark) {
		t.Errorf("mark: %v, want %v", got, mark)
	}
	d.Annotations[AnnotationLastCall] = "yesterday"
	if got := lastActivity(d); !got.Equal(created) {
		t.Errorf("unparsable mark: %v, want the creation time", got)
	}
}

// With idleTimeout the apply leaves replicas alone, the config names the
// Deployment to wake, the gateway mounts its API credential, and the wake
// Role covers exactly the idle sandboxes.
func TestIdleSandboxRendering(t *testing.T) {
	gs := testServer()
	gs.Spec.Orchestrators[0].Sandbox.IdleTimeout = &metav1.Duration{Duration: 15 * time.Minute}
	idleName := sandboxName(gs, gs.Spec.Orchestrators[0].Name)

	dep := sandboxDeployment(gs, inlineMember(gs, gs.Spec.Orchestrators[0]), sandboxImages{Sandbox: "sbx:1"}, nil)
	if dep.Spec.Replicas != nil {
		t.Errorf("idle sandbox apply sets replicas %d", *dep.Spec.Replicas)
	}
	dep = sandboxDeployment(gs, inlineMember(gs, gs.Spec.Orchestrators[1]), sandboxImages{Sandbox: "sbx:1"}, nil)
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 1 {
		t.Errorf("always-on sandbox replicas %v, want 1", dep.Spec.Replicas)
	}

	c := RenderConfig(gs, inlineMembers(gs))
	if w := c.Gateway.MCPHTTP.Orchestrators[0].Sandbox.Wake; w == nil || w.Deployment != idleName || w.Namespace != gs.Namespace {
		t.Errorf("wake = %+v", w)
	}
	if w := c.Gateway.MCPHTTP.Orchestrators[1].Sandbox.Wake; w != nil {
		t.Errorf("always-on sandbox has wake %+v", w)
	}

	gw := typed[appsv1.Deployment](t, gatewayDeployment(gs, false, "garra:test", ""))
	if a := gw.Spec.Template.Spec.AutomountServiceAccountToken; a == nil || !*a {
		t.Error("the gateway cannot wake a sandbox without its API credential")
	}

	role := wakeRole(gs, idleSandboxes(gs, inlineMembers(gs)))
	if len(role.Rules) != 1 || len(role.Rules[0].ResourceNames) != 1 || role.Rules[0].ResourceNames[0] != idleName {
		t.Errorf("wake role rules %+v", role.Rules)
	}
	if got := role.Rules[0].Verbs; len(got) != 2 || got[0] != "get" || got[1] != "patch" {
		t.Errorf("wake role verbs %v", got)
	}
}

// The suspend is decided on what the operator read, which may lag: a call
// the gateway marked in between (its patch lands before the operator's)
// must keep its sandbox. The operator's patch then conflicts, nothing is
// scaled, and the pass looks again in a second; without a mark in between
// the same pass scales the sandbox to zero.
func TestSuspendIdleKeepsASandboxMarkedMeanwhile(t *testing.T) {
	for _, marked := range []bool{true, false} {
		gs := testServer()
		gs.Spec.Orchestrators[0].Sandbox.IdleTimeout = &metav1.Duration{Duration: time.Minute}
		now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: gs.Namespace, Name: sandboxName(gs, gs.Spec.Orchestrators[0].Name),
				Annotations: map[string]string{AnnotationLastCall: now.Add(-time.Hour).Format(time.RFC3339Nano)}},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)},
		}
		funcs := interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if marked {
				// The gateway's mark, between the operator's read and its patch.
				mark := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+AnnotationLastCall+`":"`+now.Format(time.RFC3339Nano)+`"}}}`))
				if err := c.Patch(ctx, dep.DeepCopy(), mark); err != nil {
					return err
				}
			}
			return c.Patch(ctx, obj, patch, opts...)
		}}
		base := fake.NewClientBuilder().WithScheme(testScheme).WithObjects(dep).WithInterceptorFuncs(funcs).Build()
		r := &GarraServerReconciler{Client: base, APIReader: base, Now: func() time.Time { return now }}
		s := &reconcileState{gs: gs, members: inlineMembers(gs)}
		if err := r.suspendIdle(context.Background(), s); err != nil {
			t.Fatalf("marked %v: %v", marked, err)
		}
		got := &appsv1.Deployment{}
		if err := base.Get(context.Background(), client.ObjectKeyFromObject(dep), got); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int32{true: 1, false: 0}[marked]; *got.Spec.Replicas != want {
			t.Errorf("marked meanwhile %v: replicas %d, want %d", marked, *got.Spec.Replicas, want)
		}
		if marked && s.requeue != time.Second {
			t.Errorf("after a conflict the next look is in %s, want 1s", s.requeue)
		}
	}
}
