//go:build e2e

package e2e

// Benchmarks of the operator on a real cluster (`make bench-e2e`, which
// `make bench` runs when a cluster can be had):
//
//	BenchmarkGarraServerReady/orchestrators=1
//	BenchmarkGarraServerReady/orchestrators=10
//
// Each iteration creates a GarraServer with N orchestrators (agent allowed)
// and times create → Ready=True: the manager's reconcile, the kubelet
// starting the gateway and N sandbox pods, their probes passing, and the
// status catching up. The first iteration then waits for the pods to idle
// and reads their memory from the kubelet's stats summary
// (/api/v1/nodes/NODE/proxy/stats/summary, the working set the kubelet
// evicts on). The GarraServer is deleted, and waited for, outside the timer.
//
// Metrics: s/ready, and gateway-MiB, sandbox-MiB (mean working set of the
// sandbox pods) and sandbox-max-MiB of an idle GarraServer.

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/controllers"
)

// idleSettle is how long the pods of a Ready GarraServer are left alone
// before their memory is read: past start-up, and long enough for the
// kubelet to have sampled them since.
const idleSettle = 20 * time.Second

var (
	benchOnce    sync.Once
	benchCluster *cluster
	benchErr     error
)

// benchSetup prepares the cluster once per process, as the suite's
// BeforeSuite does, and cleans it up when the benchmark binary's last
// benchmark ends (b.Cleanup of the top-level benchmark).
func benchSetup(b *testing.B) *cluster {
	b.Helper()
	benchOnce.Do(func() {
		p, err := loadParams()
		if err != nil {
			benchErr = err
			return
		}
		p.Namespace += "-bench"
		c, err := newCluster(p)
		if err != nil {
			benchErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		benchErr = c.prepare(ctx, func(name string, d time.Duration) { b.Logf("%s: %.1fs", name, d.Seconds()) })
		benchCluster = c
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchCluster
}

func BenchmarkGarraServerReady(b *testing.B) {
	k := benchSetup(b)
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := k.cleanUp(ctx); err != nil {
			b.Errorf("clean up: %v", err)
		}
	})
	for _, n := range []int{1, 10} {
		b.Run(fmt.Sprintf("orchestrators=%d", n), func(b *testing.B) {
			var total time.Duration
			for i := 0; i < b.N; i++ {
				total += readyOnce(b, k, n, i)
			}
			b.ReportMetric(total.Seconds()/float64(b.N), "s/ready")
		})
	}
}

// readyOnce times one GarraServer with n orchestrators from create to
// Ready, reads its idle memory on the first iteration, and deletes it.
func readyOnce(b *testing.B, k *cluster, n, iter int) time.Duration {
	b.StopTimer()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var orchs []orch
	for j := range n {
		orchs = append(orchs, orch{name: fmt.Sprintf("o%d", j), tools: []garrav1alpha1.Tool{garrav1alpha1.ToolStatus, garrav1alpha1.ToolAgent}})
	}
	gs := newGarraServer(k.p, fmt.Sprintf("bench-%d-%d", n, iter), orchs...)
	if err := k.provideVolumes(ctx, gs.Namespace, claimsOf(gs)...); err != nil {
		b.Fatal(err)
	}
	defer func() {
		b.StopTimer()
		if err := k.deleteAndWait(ctx, gs); err != nil {
			b.Fatal(err)
		}
		if err := k.waitNoPods(ctx, gs.Namespace, map[string]string{controllers.LabelInstance: gs.Name}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}()

	b.StartTimer()
	start := time.Now()
	if err := k.c.Create(ctx, gs); err != nil {
		b.Fatal(err)
	}
	if err := k.waitReady(ctx, client.ObjectKeyFromObject(gs), 5*time.Minute); err != nil {
		b.Fatal(err)
	}
	took := time.Since(start)
	b.StopTimer()

	if iter == 0 {
		mem, err := k.idleMemory(ctx, gs)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(mem.gateway, "gateway-MiB")
		b.ReportMetric(mem.sandboxMean, "sandbox-MiB")
		b.ReportMetric(mem.sandboxMax, "sandbox-max-MiB")
	}
	return took
}

// podMemory is the idle working set of a GarraServer's pods, in MiB.
type podMemory struct {
	gateway, sandboxMean, sandboxMax float64
}

// idleMemory waits idleSettle, then reads the working set of gs's gateway
// and sandbox pods from the stats summary of the node each runs on, until
// every pod has a sample taken after the settle time.
func (k *cluster) idleMemory(ctx context.Context, gs *garrav1alpha1.GarraServer) (podMemory, error) {
	settled := time.Now().Add(idleSettle)
	select {
	case <-ctx.Done():
		return podMemory{}, ctx.Err()
	case <-time.After(idleSettle):
	}
	for {
		mem, err := k.readMemory(ctx, gs, settled)
		if err == nil {
			return mem, nil
		}
		select {
		case <-ctx.Done():
			return podMemory{}, fmt.Errorf("idle memory of %s: %w", gs.Name, err)
		case <-time.After(2 * time.Second):
		}
	}
}

func (k *cluster) readMemory(ctx context.Context, gs *garrav1alpha1.GarraServer, after time.Time) (podMemory, error) {
	var pods corev1.PodList
	if err := k.c.List(ctx, &pods, client.InNamespace(gs.Namespace), client.MatchingLabels{controllers.LabelInstance: gs.Name}); err != nil {
		return podMemory{}, err
	}
	summaries := map[string]*statsv1alpha1.Summary{}
	var out podMemory
	sandboxes := 0
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
			continue
		}
		s, ok := summaries[p.Spec.NodeName]
		if !ok {
			var err error
			if s, err = k.statsSummary(ctx, p.Spec.NodeName); err != nil {
				return podMemory{}, err
			}
			summaries[p.Spec.NodeName] = s
		}
		mib, err := podWorkingSet(s, p, after)
		if err != nil {
			return podMemory{}, err
		}
		switch p.Labels[controllers.LabelComponent] {
		case controllers.ComponentGateway:
			out.gateway = mib
		case controllers.ComponentSandbox:
			sandboxes++
			out.sandboxMean += mib
			out.sandboxMax = max(out.sandboxMax, mib)
		}
	}
	if out.gateway == 0 || sandboxes != len(gs.Spec.Orchestrators) {
		return podMemory{}, fmt.Errorf("running pods: gateway %v, %d of %d sandboxes", out.gateway != 0, sandboxes, len(gs.Spec.Orchestrators))
	}
	out.sandboxMean /= float64(sandboxes)
	return out, nil
}

// podWorkingSet is the pod's memory working set in MiB, from a sample taken
// after the given time.
func podWorkingSet(s *statsv1alpha1.Summary, p corev1.Pod, after time.Time) (float64, error) {
	for _, ps := range s.Pods {
		if ps.PodRef.UID != string(p.UID) {
			continue
		}
		m := ps.Memory
		if m == nil || m.WorkingSetBytes == nil {
			return 0, fmt.Errorf("pod %s: no memory sample yet", p.Name)
		}
		if m.Time.Time.Before(after) {
			return 0, fmt.Errorf("pod %s: last sample %s is from before the settle time", p.Name, m.Time.Format(time.RFC3339))
		}
		return float64(*m.WorkingSetBytes) / (1 << 20), nil
	}
	return 0, fmt.Errorf("pod %s: not in the stats summary of %s", p.Name, s.Node.NodeName)
}

// statsSummary reads the kubelet's stats summary through the API server's
// node proxy.
func (k *cluster) statsSummary(ctx context.Context, node string) (*statsv1alpha1.Summary, error) {
	raw, err := k.kube.CoreV1().RESTClient().Get().Resource("nodes").Name(node).
		SubResource("proxy").Suffix("stats/summary").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("stats summary of node %s: %w", node, err)
	}
	var s statsv1alpha1.Summary
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, fmt.Errorf("stats summary of node %s: %w", node, err)
	}
	return &s, nil
}

// waitNoPods waits until no pod with the labels is left in ns, so the next
// iteration starts on an idle node.
func (k *cluster) waitNoPods(ctx context.Context, ns string, lbl map[string]string) error {
	for {
		var pods corev1.PodList
		if err := k.c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(lbl)); err != nil {
			return err
		}
		if len(pods.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d pods with %v still in %s: %w", len(pods.Items), lbl, ns, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}
