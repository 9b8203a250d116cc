//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"sort"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/controllers"
	"github.com/garraia/garra/test/fakes/llmdouble"
)

var _ = Describe("An idle sandbox", Ordered, func() {
	var (
		gs  *garrav1alpha1.GarraServer
		gw  *gatewayClient
		key string
	)
	ns := func() string { return k.p.Namespace }

	BeforeAll(func(ctx SpecContext) {
		gs = newGarraServer(k.p, "idle-e2e", orch{name: "sleepy", tools: []garrav1alpha1.Tool{garrav1alpha1.ToolStatus, garrav1alpha1.ToolAgent}})
		gs.Spec.Orchestrators[0].Sandbox.IdleTimeout = &metav1.Duration{Duration: 10 * time.Second}
		applyReady(ctx, gs)
		var err error
		key, err = k.secretValue(ctx, ns(), gs.Name+"-orch-sleepy", controllers.KeyToken)
		Expect(err).NotTo(HaveOccurred())
		gw = gatewayOf(gs)
	}, NodeTimeout(6*time.Minute))

	AfterAll(func(ctx SpecContext) {
		if gs != nil {
			Expect(k.deleteAndWait(ctx, gs)).To(Succeed())
		}
	}, NodeTimeout(3*time.Minute))

	// asleep waits until the operator has suspended the sandbox: zero
	// replicas, no pod left, the status saying so, Ready still True.
	asleep := func(ctx context.Context) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			var d appsv1.Deployment
			g.Expect(k.c.Get(ctx, client.ObjectKey{Namespace: ns(), Name: gs.Name + "-sandbox-sleepy"}, &d)).To(Succeed())
			g.Expect(d.Spec.Replicas).To(HaveValue(Equal(int32(0))))
			var pods corev1.PodList
			g.Expect(k.c.List(ctx, &pods, client.InNamespace(ns()), client.MatchingLabels(podLabels(gs, controllers.ComponentSandbox, "sleepy")))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
			cur := &garrav1alpha1.GarraServer{}
			g.Expect(k.c.Get(ctx, client.ObjectKeyFromObject(gs), cur)).To(Succeed())
			g.Expect(cur.Status.Orchestrators).To(HaveLen(1))
			g.Expect(cur.Status.Orchestrators[0].Suspended).To(BeTrue())
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		Expect(k.waitReady(ctx, client.ObjectKeyFromObject(gs), 10*time.Second)).To(Succeed(), "a suspended sandbox keeps the GarraServer Ready")
	}

	It("goes to zero replicas when idle and wakes for the next agent call, which succeeds", func(ctx SpecContext) {
		var wakes []time.Duration
		for i := range 3 {
			asleep(ctx)
			word := fmt.Sprintf("woken-%d", i)
			Expect(double.script(ctx,
				toolCall("bash", map[string]string{"command": "echo " + word}),
				llmdouble.ScriptStep{Text: "done " + word},
			)).To(Succeed())
			start := time.Now()
			env, raw, isErr, err := gw.Agent(ctx, key, "Run it.")
			took := time.Since(start)
			Expect(err).NotTo(HaveOccurred())
			Expect(isErr).To(BeFalse(), raw)
			Expect(env.Answer).To(Equal("done "+word), raw)
			Expect(env.ToolCalls).To(HaveLen(1), raw)
			Expect(env.ToolCalls[0].Success).To(BeTrue(), raw)
			reqs, err := double.requests(ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(reqs.Requests).To(HaveLen(2))
			Expect(reqs.Requests[1].RawBody).To(ContainSubstring(word))
			wakes = append(wakes, took)
			GinkgoWriter.Printf("wake %d: the agent call answered %.2fs after it started on a suspended sandbox\n", i+1, took.Seconds())
		}
		sorted := append([]time.Duration(nil), wakes...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
		times.record("idle sandbox: agent call on a suspended sandbox, p50 of 3 (wake + run)", sorted[1])
	}, NodeTimeout(10*time.Minute))
})
