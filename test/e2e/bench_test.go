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
	"os"
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
// BeforeSuite does; TestMain cleans it up after the last benchmark.
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

// TestMain cleans up what benchSetup prepared once every benchmark of the
// process has run (a top-level benchmark's Cleanup would run before the
// next benchmark).
func TestMain(m *testing.M) {
	code := m.Run()
	if benchCluster != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		if err := benchCluster.cleanUp(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "clean up after the benchmarks:", err)
			code = 1
		}
		cancel()
	}
	os.Exit(code)
}

func BenchmarkGarraServerReady(b *testing.B) {
	k := benchSetup(b)
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

// BenchmarkOnboardLive times, on a running GarraServer, a patch that adds
// one orchestrator until that orchestrator's first successful call, while
// a client calls the gateway every 100 ms: the calls that fail during the
// change are the unavailability onboarding costs the other tenants
// (expected 0: the change reaches the running pod without a restart).
func BenchmarkOnboardLive(b *testing.B) {
	k := benchSetup(b)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	gs := newGarraServer(k.p, "bench-onboard", orch{name: "first", tools: []garrav1alpha1.Tool{garrav1alpha1.ToolStatus}})
	if err := k.provideVolumes(ctx, gs.Namespace, claimsOf(gs)...); err != nil {
		b.Fatal(err)
	}
	if err := k.c.Create(ctx, gs); err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := k.deleteAndWait(ctx, gs); err != nil {
			b.Error(err)
		}
	}()
	if err := k.waitReady(ctx, client.ObjectKeyFromObject(gs), 5*time.Minute); err != nil {
		b.Fatal(err)
	}
	dialer := newServiceDialer(k)
	defer dialer.close()
	hc := dialer.httpClient()
	hc.Timeout = 5 * time.Second
	gw := newGatewayClient(serviceURL(gs.Namespace, gs.Name+"-gateway", controllers.GatewayPort), hc)
	firstKey, err := k.secretValue(ctx, gs.Namespace, gs.Name+"-orch-first", controllers.KeyToken)
	if err != nil {
		b.Fatal(err)
	}
	if err := eventually(ctx, time.Minute, func() error { _, err := gw.toolNames(ctx, firstKey); return err }); err != nil {
		b.Fatal(err)
	}

	var total time.Duration
	var calls, failed int
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		name := fmt.Sprintf("new%d", i)
		next := newGarraServer(k.p, gs.Name, orch{name: name, tools: []garrav1alpha1.Tool{garrav1alpha1.ToolStatus}})
		if err := k.provideVolumes(ctx, gs.Namespace, claimsOf(next)[1:]...); err != nil {
			b.Fatal(err)
		}
		stop := make(chan struct{})
		polled := make(chan [2]int, 1)
		go func() { // the other tenant, calling every 100 ms
			n, bad := 0, 0
			t := time.NewTicker(100 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stop:
					polled <- [2]int{n, bad}
					return
				case <-t.C:
					n++
					if _, err := gw.toolNames(ctx, firstKey); err != nil {
						bad++
					}
				}
			}
		}()
		cur := &garrav1alpha1.GarraServer{}
		if err := k.c.Get(ctx, client.ObjectKeyFromObject(gs), cur); err != nil {
			b.Fatal(err)
		}
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec.Orchestrators = append(cur.Spec.Orchestrators, next.Spec.Orchestrators[0])
		b.StartTimer()
		start := time.Now()
		if err := k.c.Patch(ctx, cur, patch); err != nil {
			b.Fatal(err)
		}
		err := eventually(ctx, 5*time.Minute, func() error {
			key, err := k.secretValue(ctx, gs.Namespace, gs.Name+"-orch-"+name, controllers.KeyToken)
			if err != nil {
				return err
			}
			_, err = gw.toolNames(ctx, key)
			return err
		})
		took := time.Since(start)
		b.StopTimer()
		close(stop)
		p := <-polled
		if err != nil {
			b.Fatalf("%s never answered: %v", name, err)
		}
		total += took
		calls += p[0]
		failed += p[1]
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(total.Seconds()/float64(b.N), "s/onboard")
	b.ReportMetric(float64(failed), "failed-calls")
	b.ReportMetric(float64(calls), "calls")
}

// eventually retries f every 250 ms until it succeeds or within passes.
func eventually(ctx context.Context, within time.Duration, f func() error) error {
	deadline := time.Now().Add(within)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
