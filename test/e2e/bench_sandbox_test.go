//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/controllers"
)

// benchServer creates gs, waits for Ready and deletes it when b ends.
func benchServer(b *testing.B, k *cluster, gs *garrav1alpha1.GarraServer) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	if err := k.provideVolumes(ctx, gs.Namespace, claimsOf(gs)...); err != nil {
		b.Fatal(err)
	}
	if err := k.c.Create(ctx, gs); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		if err := k.deleteAndWait(ctx, gs); err != nil {
			b.Error(err)
		}
		if err := k.waitNoPods(ctx, gs.Namespace, map[string]string{controllers.LabelInstance: gs.Name}); err != nil {
			b.Error(err)
		}
	})
	if err := k.waitReady(ctx, client.ObjectKeyFromObject(gs), 5*time.Minute); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkSandboxWake times a garra_agent call that finds its sandbox
// suspended (idleTimeout 10s): the wake, the handshake and a model turn
// against the double, which answers at once. Each iteration first waits
// for the operator to suspend the sandbox again (not timed).
func BenchmarkSandboxWake(b *testing.B) {
	k := benchSetup(b)
	gs := newGarraServer(k.p, "bench-wake", orch{name: "sleepy", tools: []garrav1alpha1.Tool{garrav1alpha1.ToolStatus, garrav1alpha1.ToolAgent}})
	gs.Spec.Orchestrators[0].Sandbox.IdleTimeout = &metav1.Duration{Duration: 10 * time.Second}
	benchServer(b, k, gs)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	key, err := k.secretValue(ctx, gs.Namespace, gs.Name+"-orch-sleepy", controllers.KeyToken)
	if err != nil {
		b.Fatal(err)
	}
	d := newServiceDialer(k)
	defer d.close()
	hc := d.httpClient()
	hc.Timeout = 2 * time.Minute
	gw := newGatewayClient(serviceURL(gs.Namespace, gs.Name+"-gateway", controllers.GatewayPort), hc)

	asleep := func() error {
		return eventually(ctx, 3*time.Minute, func() error {
			var dep appsv1.Deployment
			if err := k.c.Get(ctx, client.ObjectKey{Namespace: gs.Namespace, Name: gs.Name + "-sandbox-sleepy"}, &dep); err != nil {
				return err
			}
			var pods corev1.PodList
			if err := k.c.List(ctx, &pods, client.InNamespace(gs.Namespace), client.MatchingLabels(podLabels(gs, controllers.ComponentSandbox, "sleepy"))); err != nil {
				return err
			}
			if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 0 || len(pods.Items) != 0 {
				return fmt.Errorf("not suspended yet: replicas %v, %d pods", dep.Spec.Replicas, len(pods.Items))
			}
			return nil
		})
	}
	var took []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if err := asleep(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		env, raw, isErr, err := gw.Agent(ctx, key, fmt.Sprintf("wake %d", i))
		took = append(took, time.Since(start))
		if err != nil || isErr || !env.OK {
			b.Fatalf("agent call on a suspended sandbox: %v %s", err, raw)
		}
	}
	b.StopTimer()
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	b.ReportMetric(took[len(took)/2].Seconds(), "p50-s")
	b.ReportMetric(took[min(len(took)-1, len(took)*95/100)].Seconds(), "p95-s")
}

// BenchmarkSandboxIdleMemory reads the idle working set of a sandbox in
// the default image and of one in a team's own image (garra copied in by
// the init container), side by side.
func BenchmarkSandboxIdleMemory(b *testing.B) {
	k := benchSetup(b)
	for _, tc := range []struct{ name, image string }{{"default", ""}, {"own", k.p.ToolchainImage}} {
		b.Run("image="+tc.name, func(b *testing.B) {
			gs := newGarraServer(k.p, "bench-mem-"+tc.name, orch{name: "o", tools: []garrav1alpha1.Tool{garrav1alpha1.ToolStatus}})
			gs.Spec.Orchestrators[0].Sandbox.Image = tc.image
			benchServer(b, k, gs)
			var mem podMemory
			for i := 0; i < b.N; i++ {
				// Each reading waits for the pods to settle: its own bound.
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				var err error
				mem, err = k.idleMemory(ctx, gs)
				cancel()
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(mem.sandboxMean, "sandbox-MiB")
		})
	}
}
