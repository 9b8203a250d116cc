package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// oneSandbox is team-a in ns with one orchestrator, box, whose sandbox is sb.
func oneSandbox(ns string, sb garrav1alpha1.SandboxSpec) *garrav1alpha1.GarraServer {
	GinkgoHelper()
	gs := &garrav1alpha1.GarraServer{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: ns},
		Spec: garrav1alpha1.GarraServerSpec{
			LLM:           garrav1alpha1.LLMSpec{Provider: "ollama"},
			Orchestrators: []garrav1alpha1.OrchestratorSpec{{Name: "box", Tools: []garrav1alpha1.Tool{"agent"}, Sandbox: sb}},
		},
	}
	must(k8sClient.Create(ctx, gs))
	return gs
}

// sandboxPod is the pod template of box's sandbox Deployment, once it exists.
func sandboxPod(ns string) corev1.PodSpec {
	GinkgoHelper()
	dep := &appsv1.Deployment{}
	Eventually(func() error {
		return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team-a-sandbox-box"}, dep)
	}, timeout, interval).Should(Succeed())
	return dep.Spec.Template.Spec
}

var _ = Describe("Sandbox pod settings", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("passes resources, runtimeClassName, nodeSelector and tolerations to the sandbox Deployment", func() {
		q := resource.MustParse
		oneSandbox(ns, garrav1alpha1.SandboxSpec{
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: q("250m"), corev1.ResourceMemory: q("256Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: q("1"), corev1.ResourceMemory: q("256Mi")},
			},
			RuntimeClassName: ptr.To("gvisor"),
			NodeSelector:     map[string]string{"garra.garraia.io/pool": "sandbox"},
			Tolerations: []corev1.Toleration{{Key: "garra.garraia.io/sandbox", Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoSchedule}},
		})
		pod := sandboxPod(ns)
		Expect(pod.RuntimeClassName).To(Equal(ptr.To("gvisor")))
		Expect(pod.NodeSelector).To(Equal(map[string]string{"garra.garraia.io/pool": "sandbox"}))
		Expect(pod.Tolerations).To(Equal([]corev1.Toleration{{Key: "garra.garraia.io/sandbox", Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoSchedule}}))
		res := pod.Containers[0].Resources
		Expect(res.Requests.Cpu().String()).To(Equal("250m"))
		Expect(res.Limits.Memory().String()).To(Equal("256Mi"))

		By("a request above its limit: InvalidSpec naming the field, the Deployment left as it was")
		update(ns, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].Sandbox.Resources.Requests[corev1.ResourceMemory] = q("1Gi")
		})
		Eventually(func() *metav1.Condition { return condition(ns, "Ready") }, timeout, interval).Should(And(
			HaveField("Reason", "InvalidSpec"),
			HaveField("Message", ContainSubstring("spec.orchestrators[box].sandbox.resources.requests.memory: 1Gi is more than its limit 256Mi"))))
		Expect(sandboxPod(ns).Containers[0].Resources.Requests.Memory().String()).To(Equal("256Mi"))

		By("a toleration the API server would refuse: InvalidSpec naming it")
		update(ns, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].Sandbox.Resources.Requests[corev1.ResourceMemory] = q("128Mi")
			gs.Spec.Orchestrators[0].Sandbox.Tolerations[0].Value = "yes"
		})
		Eventually(func() *metav1.Condition { return condition(ns, "Ready") }, timeout, interval).Should(And(
			HaveField("Reason", "InvalidSpec"),
			HaveField("Message", ContainSubstring("spec.orchestrators[box].sandbox.tolerations[0].value: must be empty when operator is Exists"))))

		By("fixed: applied again")
		update(ns, func(gs *garrav1alpha1.GarraServer) { gs.Spec.Orchestrators[0].Sandbox.Tolerations[0].Value = "" })
		Eventually(func() string { return sandboxPod(ns).Containers[0].Resources.Requests.Memory().String() }, timeout, interval).
			Should(Equal("128Mi"))
		Eventually(func() string { return condition(ns, "Ready").Reason }, timeout, interval).ShouldNot(Equal("InvalidSpec"))
	})
})
