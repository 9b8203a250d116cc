package controllers

// The scale benchmark of attached Orchestrators, on envtest: one
// GarraServer (from: All) and 1,000 Orchestrators across 50 namespaces,
// beside the inline case at the API's cap of 32 entries:
//
//	go test -run '^$' -bench BenchmarkAttached -benchtime=1x -timeout 30m ./controllers/
//
// For each: the time from the first create until every orchestrator is
// Accepted with its seven objects applied (and the server's status caught
// up), the manager's API writes in that time (and in the tail of passes
// already queued, until two seconds pass without a write), its writes in
// the quiet window after (GARRA_BENCH_QUIET, default one minute; a pass at
// rest that writes is a bug), the manager's heap in use once settled, and the size
// of what the gateway is handed (config.yml, tokens Secret) against the
// API server's 1 MiB object limit. The manager runs in this process, so
// the heap is the manager's plus the benchmark's own small client.

import (
	"context"
	"fmt"
	"maps"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// benchAttachedTimeout bounds one wait for convergence.
const benchAttachedTimeout = 10 * time.Minute

func BenchmarkAttached(b *testing.B) {
	admin, counter, done := benchEnv(b, "../config/crd/bases")
	defer done()
	quietFor := time.Minute
	if v := os.Getenv("GARRA_BENCH_QUIET"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			b.Fatalf("GARRA_BENCH_QUIET: %v", err)
		}
		quietFor = d
	}
	for _, c := range []struct {
		name              string
		inline, teams, ns int
	}{
		{"inline=32", 32, 0, 0},
		{"attached=1000/namespaces=50", 0, 1000, 50},
	} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				r := benchAttachedOnce(b, admin, counter, c.inline, c.teams, c.ns, quietFor)
				b.ReportMetric(r.converge.Seconds(), "s/converge")
				b.ReportMetric(float64(r.writes), "writes/converge")
				b.ReportMetric(float64(r.quietWrites), "writes/quiet")
				b.ReportMetric(float64(r.heap)/(1<<20), "MiB-heap")
				b.Logf("%s: converged in %s with %d writes %v; %d writes in the %s after; heap in use %.1f MiB; config.yml %d KiB, tokens Secret %d KiB (limit 1024 KiB each)",
					c.name, r.converge.Round(time.Millisecond), r.writes, r.byResource, r.quietWrites, quietFor,
					float64(r.heap)/(1<<20), r.configBytes/1024, r.tokensBytes/1024)
			}
		})
	}
}

type benchAttachedResult struct {
	converge                 time.Duration
	writes, quietWrites      int
	byResource               map[string]int
	heap                     uint64
	configBytes, tokensBytes int
}

// benchAttachedOnce makes a GarraServer with inline entries, or one with
// teams Orchestrators spread over nsCount namespaces, and measures it.
func benchAttachedOnce(b *testing.B, c client.Client, counter *writeCounter, inline, teams, nsCount int, quietFor time.Duration) benchAttachedResult {
	b.Helper()
	ctx := context.Background()
	b.StopTimer()
	platform := benchNamespace(b, c, "plat-")
	gs := benchServer(b, c, platform)
	gs.Spec.AllowedOrchestrators = &garrav1alpha1.AllowedOrchestrators{Namespaces: &garrav1alpha1.OrchestratorNamespaces{From: garrav1alpha1.NamespacesFromAll}}
	settings := garrav1alpha1.OrchestratorSettings{Tools: []garrav1alpha1.Tool{"status", "agent"}}
	for i := range inline {
		gs.Spec.Orchestrators = append(gs.Spec.Orchestrators, garrav1alpha1.OrchestratorSpec{Name: fmt.Sprintf("o%03d", i), OrchestratorSettings: settings})
	}
	var teamNS []string
	for range nsCount {
		teamNS = append(teamNS, benchNamespace(b, c, "team-"))
	}
	counted := append([]string{platform}, teamNS...)
	before := benchMark(counter, counted)

	b.StartTimer()
	start := time.Now()
	if err := c.Create(ctx, gs); err != nil {
		b.Fatal(err)
	}
	// Created by a few clients at once, as teams would, not one by one.
	var wg sync.WaitGroup
	errs := make(chan error, teams)
	sem := make(chan struct{}, 8)
	for i := range teams {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ob := &garrav1alpha1.Orchestrator{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("o%03d", i), Namespace: teamNS[i%nsCount]},
				Spec: garrav1alpha1.AttachedOrchestratorSpec{
					ServerRef:            garrav1alpha1.ServerReference{Name: "team-a", Namespace: platform},
					OrchestratorSettings: settings,
				},
			}
			if err := c.Create(ctx, ob); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	want := inline + teams
	deadline := start.Add(benchAttachedTimeout)
	lastLog := time.Now()
	for {
		ok, why, err := benchAttachedDone(ctx, c, platform, inline, teams)
		if err != nil {
			b.Fatal(err)
		}
		if ok {
			break
		}
		if time.Since(lastLog) > 15*time.Second {
			b.Logf("%s after %s: %s", b.Name(), time.Since(start).Round(time.Second), why)
			lastLog = time.Now()
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d orchestrators: not converged after %s: %s", want, benchAttachedTimeout, why)
		}
		time.Sleep(time.Second)
	}
	res := benchAttachedResult{converge: time.Since(start)}
	b.StopTimer()

	// Passes already queued when the last status landed still run (one
	// may read the server from a cache a moment behind, and write the
	// same status again): their writes count with the convergence, and
	// the quiet window starts once two seconds pass without one.
	benchSettle(counter, counted, 2*time.Second)
	w := benchSince(counter, before)
	res.writes = len(w)
	res.byResource = benchByResource(w)
	// The quiet window: everything has converged; no pass may write.
	mark := benchMark(counter, counted)
	time.Sleep(quietFor)
	if rest := benchSince(counter, mark); len(rest) > 0 {
		res.quietWrites = len(rest)
		b.Logf("writes at rest: %v", rest[:min(len(rest), 20)])
		var evs eventsv1.EventList
		if err := c.List(ctx, &evs, client.InNamespace(platform)); err == nil {
			for _, e := range evs.Items {
				b.Logf("event %s %s x%d: %s", e.Reason, e.Regarding.Name, benchEventCount(e), e.Note)
			}
		}
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.heap = ms.HeapInuse
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: platform, Name: "team-a-gateway"}, cm); err != nil {
		b.Fatal(err)
	}
	res.configBytes = len(cm.Data[ConfigKey])
	sec := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: platform, Name: "team-a-gateway-tokens"}, sec); err != nil {
		b.Fatal(err)
	}
	for k, v := range sec.Data {
		res.tokensBytes += len(k) + len(v)
	}
	// Deleting the namespaces is left to the control plane's end: the
	// next case gets namespaces of its own.
	return res
}

// benchAttachedDone reports whether the server's orchestrators have all
// converged: every Orchestrator Accepted with the server's report in its
// status, each orchestrator's seven objects there, and the server's status
// of its latest generation counting them; or what is missing.
func benchAttachedDone(ctx context.Context, c client.Client, platform string, inline, teams int) (bool, string, error) {
	gs := &garrav1alpha1.GarraServer{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: platform, Name: "team-a"}, gs); err != nil {
		return false, "", err
	}
	if gs.Status.ObservedGeneration != gs.Generation {
		return false, "the server's status is behind its generation", nil
	}
	if teams > 0 {
		a := gs.Status.AttachedOrchestrators
		if a == nil || int(a.Accepted) != teams {
			return false, fmt.Sprintf("server summary %+v", a), nil
		}
		var list garrav1alpha1.OrchestratorList
		if err := c.List(ctx, &list); err != nil {
			return false, "", err
		}
		n, told := 0, 0
		for _, ob := range list.Items {
			if ob.Spec.ServerRef.Namespace != platform || !meta.IsStatusConditionTrue(ob.Status.Conditions, garrav1alpha1.ConditionAccepted) {
				continue
			}
			n++
			// The server's report has reached its status.
			if c := meta.FindStatusCondition(ob.Status.Conditions, garrav1alpha1.ConditionConfigApplied); c != nil &&
				c.ObservedGeneration == ob.Generation && c.Reason != garrav1alpha1.ReasonPending {
				told++
			}
		}
		if n != teams || told != teams {
			return false, fmt.Sprintf("%d of %d Orchestrators Accepted, %d with the server's report", n, teams, told), nil
		}
	}
	// Per orchestrator: Deployment, Service, ServiceAccount,
	// NetworkPolicy, claim, and two Secrets.
	sel := client.MatchingLabels{LabelName: AppName, LabelInstance: "team-a", LabelComponent: ComponentSandbox}
	got := map[string]int{}
	for kind, list := range map[string]client.ObjectList{
		"Deployment": &appsv1.DeploymentList{}, "Service": &corev1.ServiceList{}, "ServiceAccount": &corev1.ServiceAccountList{},
		"NetworkPolicy": &networkingv1.NetworkPolicyList{}, "PersistentVolumeClaim": &corev1.PersistentVolumeClaimList{}, "Secret": &corev1.SecretList{},
	} {
		if err := c.List(ctx, list, sel); err != nil {
			return false, "", err
		}
		objs, err := objectsOfAny(list)
		if err != nil {
			return false, "", err
		}
		for _, o := range objs {
			if l := o.GetLabels(); (teams > 0) == (l[LabelNamespace] == platform) && (teams > 0 || o.GetNamespace() == platform) {
				got[kind]++
			}
		}
	}
	want := inline + teams
	for kind, n := range got {
		w := want
		if kind == "Secret" {
			w = 2 * want
		}
		if n != w {
			return false, fmt.Sprintf("%d of %d %ss", n, w, kind), nil
		}
	}
	if len(got) != 6 {
		return false, fmt.Sprintf("objects so far: %v", got), nil
	}
	return true, "", nil
}

// benchNamespace creates a namespace named from prefix.
func benchNamespace(b *testing.B, c client.Client, prefix string) string {
	b.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := c.Create(context.Background(), ns); err != nil {
		b.Fatal(err)
	}
	return ns.Name
}

// benchSettle waits until nss have had no write for d (at most a minute).
func benchSettle(w *writeCounter, nss []string, d time.Duration) {
	last, since, end := benchMark(w, nss), time.Now(), time.Now().Add(time.Minute)
	for time.Since(since) < d && time.Now().Before(end) {
		time.Sleep(50 * time.Millisecond)
		if n := benchMark(w, nss); !maps.Equal(n, last) {
			last, since = n, time.Now()
		}
	}
}

// benchMark is how many writes each namespace of nss has had so far.
func benchMark(w *writeCounter, nss []string) map[string]int {
	out := map[string]int{}
	for _, ns := range nss {
		out[ns] = len(w.in(ns))
	}
	return out
}

// benchSince are the writes made since mark in its namespaces, in a
// stable order (by namespace, then as made).
func benchSince(w *writeCounter, mark map[string]int) []string {
	nss := sortedKeys(mark)
	var out []string
	for _, ns := range nss {
		out = append(out, w.in(ns)[mark[ns]:]...)
	}
	return out
}

// benchEventCount is how many times an event was recorded.
func benchEventCount(e eventsv1.Event) int32 {
	if e.Series != nil {
		return e.Series.Count
	}
	return 1
}
