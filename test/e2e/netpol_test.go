//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/controllers"
)

// probeBound is how long a probe waits for a TCP connection or a name: a
// port the policy drops answers nothing, so "closed" is a timeout.
const probeBound = 3 * time.Second

// probeScript connects to %[1]s:%[2]d with bash's /dev/tcp (the images have
// no other client) within the bound and prints open or closed.
const probeScript = `if timeout %[3]d bash -c 'exec 3<>/dev/tcp/%[1]s/%[2]d' 2>/dev/null; then echo open; else echo closed; fi`

// resolveScript looks a name up within the bound and prints resolved or
// unresolved.
const resolveScript = `if timeout %[2]d getent hosts %[1]s >/dev/null 2>&1; then echo resolved; else echo unresolved; fi`

var _ = Describe("Sandbox isolation at the network (NetworkPolicy enforced)", Ordered, func() {
	var (
		gs      *garrav1alpha1.GarraServer
		gw      *gatewayClient
		aKey    string
		pods    map[string]*corev1.Pod // sandbox pods by orchestrator
		strange *corev1.Pod
		// Addresses every probe aims at.
		aService, aPodIP, gatewayService, gatewayPodIP, apiService, doubleService string
	)
	ns := func() string { return k.p.Namespace }

	// probe runs one connect from pod and returns "open" or "closed" and
	// how long it took.
	probe := func(ctx context.Context, pod *corev1.Pod, host string, port int32) (string, time.Duration) {
		GinkgoHelper()
		start := time.Now()
		out, errOut, err := k.exec(ctx, ns(), pod.Name, "bash", "-c", fmt.Sprintf(probeScript, host, port, int(probeBound.Seconds())))
		Expect(err).NotTo(HaveOccurred(), "exec in %s: %s", pod.Name, errOut)
		return strings.TrimSpace(out), time.Since(start)
	}
	// closed waits (one policy sync) until pod cannot reach host:port, and
	// then checks it stays so.
	closed := func(ctx context.Context, pod *corev1.Pod, what, host string, port int32) {
		GinkgoHelper()
		Eventually(func() string { s, _ := probe(ctx, pod, host, port); return s }).
			WithContext(ctx).WithTimeout(20*time.Second).WithPolling(time.Second).Should(Equal("closed"), "%s from %s", what, pod.Name)
		s, took := probe(ctx, pod, host, port)
		Expect(s).To(Equal("closed"), "%s from %s", what, pod.Name)
		GinkgoWriter.Printf("%s → %s: closed (%.1fs)\n", pod.Name, what, took.Seconds())
	}
	open := func(ctx context.Context, pod *corev1.Pod, what, host string, port int32) {
		GinkgoHelper()
		Eventually(func() string { s, _ := probe(ctx, pod, host, port); return s }).
			WithContext(ctx).WithTimeout(20*time.Second).WithPolling(time.Second).Should(Equal("open"), "%s from %s", what, pod.Name)
	}
	svcIP := func(ctx context.Context, namespace, name string) string {
		GinkgoHelper()
		var svc corev1.Service
		Expect(k.c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &svc)).To(Succeed())
		return svc.Spec.ClusterIP
	}

	BeforeAll(func(ctx SpecContext) {
		if os.Getenv("NETPOL") == "0" {
			Skip("NetworkPolicy is not enforced on this cluster (NETPOL=0: kube-router is not built); the network cases need it")
		}
		gs = newGarraServer(k.p, "net-e2e",
			orch{name: "a", tools: []garrav1alpha1.Tool{garrav1alpha1.ToolStatus, garrav1alpha1.ToolAgent}},
			orch{name: "b", tools: []garrav1alpha1.Tool{garrav1alpha1.ToolStatus}},
			orch{name: "c", tools: []garrav1alpha1.Tool{garrav1alpha1.ToolStatus}},
		)
		gs.Spec.Orchestrators[2].Sandbox.Egress = garrav1alpha1.EgressInternet
		applyReady(ctx, gs)
		// Through the policies: the gateway's handshake with each of the
		// three sandboxes works, as the operator reports it.
		start := time.Now()
		waitVerified(ctx, gs)
		times.record("GarraServer Ready → Verified (3 sandboxes)", time.Since(start))

		pods = map[string]*corev1.Pod{}
		for _, o := range []string{"a", "b", "c"} {
			p, err := k.runningPod(ctx, ns(), podLabels(gs, controllers.ComponentSandbox, o))
			Expect(err).NotTo(HaveOccurred())
			pods[o] = p
		}
		gwPod, err := k.runningPod(ctx, ns(), podLabels(gs, controllers.ComponentGateway, ""))
		Expect(err).NotTo(HaveOccurred())

		// A pod that is neither the gateway nor a sandbox, under no policy.
		strange = callerPod(ns(), "net-stranger", "default", "unused", k.p.SandboxImage)
		Expect(k.c.Create(ctx, strange)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(k.c.Get(ctx, client.ObjectKeyFromObject(strange), strange)).To(Succeed())
			g.Expect(strange.Status.Phase).To(Equal(corev1.PodRunning))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())

		aService = svcIP(ctx, ns(), gs.Name+"-sandbox-a")
		aPodIP = pods["a"].Status.PodIP
		gatewayService = svcIP(ctx, ns(), gs.Name+"-gateway")
		gatewayPodIP = gwPod.Status.PodIP
		apiService = svcIP(ctx, "default", "kubernetes")
		doubleService = svcIP(ctx, ns(), doubleName)

		aKey, err = k.secretValue(ctx, ns(), gs.Name+"-orch-a", controllers.KeyToken)
		Expect(err).NotTo(HaveOccurred())
		gw = gatewayOf(gs)
	}, NodeTimeout(6*time.Minute))

	AfterAll(func(ctx SpecContext) {
		if strange != nil {
			Expect(k.deleteAndWait(ctx, strange)).To(Succeed())
		}
		if gs != nil {
			Expect(k.deleteAndWait(ctx, gs)).To(Succeed())
		}
	}, NodeTimeout(3*time.Minute))

	It("lets a pod under no policy reach what is open, so a closed probe means the policy", func(ctx SpecContext) {
		open(ctx, strange, "the LLM double's Service", doubleService, 8080)
		open(ctx, strange, "the gateway's Service", gatewayService, controllers.GatewayPort)
	}, NodeTimeout(time.Minute))

	It("keeps every address away from orchestrator b's sandbox (egress none)", func(ctx SpecContext) {
		b := pods["b"]
		closed(ctx, b, "a's sandbox Service", aService, controllers.SandboxPort)
		closed(ctx, b, "a's sandbox pod", aPodIP, controllers.SandboxPort)
		closed(ctx, b, "the gateway's Service", gatewayService, controllers.GatewayPort)
		closed(ctx, b, "the gateway's pod", gatewayPodIP, controllers.GatewayPort)
		closed(ctx, b, "the API server's Service", apiService, 443)
		closed(ctx, b, "the LLM double's Service", doubleService, 8080)
	}, NodeTimeout(3*time.Minute))

	It("lets no name resolve in a sandbox with egress none", func(ctx SpecContext) {
		out, _, err := k.exec(ctx, ns(), pods["a"].Name, "bash", "-c", fmt.Sprintf(resolveScript, "kubernetes.default.svc.cluster.local", int(probeBound.Seconds())))
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.TrimSpace(out)).To(Equal("unresolved"))
	}, NodeTimeout(time.Minute))

	It("admits only the gateway to a's sandbox", func(ctx SpecContext) {
		closed(ctx, strange, "a's sandbox Service", aService, controllers.SandboxPort)
		closed(ctx, strange, "a's sandbox pod", aPodIP, controllers.SandboxPort)

		// The gateway reaches it: a's agent runs bash there.
		reqs := agentBash(ctx, gw, aKey, "Run it.", "echo reached-$((6*7))")
		Expect(reqs.Requests[1].RawBody).To(ContainSubstring("reached-42"))
	}, NodeTimeout(2*time.Minute))

	It("keeps cluster addresses away from a sandbox with egress internet, while DNS answers", func(ctx SpecContext) {
		c := pods["c"]
		out, _, err := k.exec(ctx, ns(), c.Name, "bash", "-c", fmt.Sprintf(resolveScript, "kubernetes.default.svc.cluster.local", int(probeBound.Seconds())))
		Expect(err).NotTo(HaveOccurred())
		Expect(strings.TrimSpace(out)).To(Equal("resolved"), "DNS to kube-dns is allowed with egress internet")
		closed(ctx, c, "a's sandbox Service", aService, controllers.SandboxPort)
		closed(ctx, c, "a's sandbox pod", aPodIP, controllers.SandboxPort)
		closed(ctx, c, "the gateway's pod", gatewayPodIP, controllers.GatewayPort)
		closed(ctx, c, "the API server's Service", apiService, 443)
		closed(ctx, c, "the LLM double's Service", doubleService, 8080)

		// Public addresses cannot be reached from this machine at all, so
		// what egress internet allows is shown by the policy itself.
		var np networkingv1.NetworkPolicy
		Expect(k.c.Get(ctx, client.ObjectKey{Namespace: ns(), Name: gs.Name + "-sandbox-c"}, &np)).To(Succeed())
		Expect(np.Spec.Egress).To(HaveLen(2))
		block := np.Spec.Egress[0].To[0].IPBlock
		Expect(block).NotTo(BeNil())
		Expect(block.CIDR).To(Equal(controllers.PublicIPv4))
		Expect(block.Except).To(ConsistOf(controllers.NonPublicIPv4))
	}, NodeTimeout(3*time.Minute))
})
