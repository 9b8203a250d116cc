package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// oneSandbox is team-a in ns with one orchestrator, box, whose sandbox is
// sb, and any others given.
func oneSandbox(ns string, sb garrav1alpha1.SandboxSpec, more ...garrav1alpha1.OrchestratorSpec) *garrav1alpha1.GarraServer {
	GinkgoHelper()
	gs := &garrav1alpha1.GarraServer{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: ns},
		Spec: garrav1alpha1.GarraServerSpec{
			LLM: garrav1alpha1.LLMSpec{Provider: "ollama"},
			Orchestrators: append([]garrav1alpha1.OrchestratorSpec{{Name: "box", OrchestratorSettings: garrav1alpha1.OrchestratorSettings{Tools: []garrav1alpha1.Tool{"agent"}, Sandbox: sb}}},
				more...),
		},
	}
	must(k8sClient.Create(ctx, gs))
	return gs
}

// sandboxPod is the pod template of box's sandbox Deployment, once it exists.
func sandboxPod(ns string) corev1.PodSpec {
	GinkgoHelper()
	return sandboxTemplate(ns, "box").Spec
}

func sandboxTemplate(ns, orch string) corev1.PodTemplateSpec {
	GinkgoHelper()
	dep := &appsv1.Deployment{}
	Eventually(func() error {
		return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team-a-sandbox-" + orch}, dep)
	}, timeout, interval).Should(Succeed())
	return dep.Spec.Template
}

// restrictedNamespace is a namespace whose Pod Security admission enforces
// the restricted standard, at the API server's own version.
func restrictedNamespace() string {
	GinkgoHelper()
	n := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "garra-restricted-", Labels: map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
	}}}
	must(k8sClient.Create(ctx, n))
	return n.Name
}

// dryRunPod asks the API server (admission included) whether a pod from
// tmpl may be created in ns, without creating it.
func dryRunPod(ns, name string, tmpl corev1.PodTemplateSpec) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: tmpl.Labels}, Spec: *tmpl.Spec.DeepCopy()}
	return k8sClient.Create(ctx, pod, client.DryRunAll)
}

var _ = Describe("Sandbox pod settings", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("passes resources, runtimeClassName, nodeSelector, tolerations and requiredTools to the sandbox Deployment", func() {
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
			RequiredTools: []string{"go", "make", "python3"},
		})
		pod := sandboxPod(ns)
		Expect(pod.Containers[0].Command).To(ContainElement("--required-tools=go,make,python3"))
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

	It("runs garra in an image of the user's through an init container, and the pod passes restricted Pod Security admission", func() {
		ns := restrictedNamespace()
		oneSandbox(ns, garrav1alpha1.SandboxSpec{Image: "golang:1.26-bookworm"},
			garrav1alpha1.OrchestratorSpec{Name: "plain", OrchestratorSettings: garrav1alpha1.OrchestratorSettings{Tools: []garrav1alpha1.Tool{"agent"}}})
		own, plain := sandboxTemplate(ns, "box"), sandboxTemplate(ns, "plain")

		By("the user's image runs the copied garra; the operator's image runs its own")
		Expect(own.Spec.InitContainers).To(HaveLen(1))
		ic := own.Spec.InitContainers[0]
		Expect(ic.Image).To(Equal(testImages[0]), "the copy comes from the manager's garra image")
		Expect(ic.Command).To(Equal([]string{"garra", "copy-binary", BinDir}))
		c := own.Spec.Containers[0]
		Expect(c.Image).To(Equal("golang:1.26-bookworm"))
		Expect(c.Command[:2]).To(Equal([]string{BinDir + "/garra", "sandbox"}))
		Expect(c.WorkingDir).To(Equal(WorkspaceDir))
		Expect(c.Env).To(ContainElement(corev1.EnvVar{Name: "HOME", Value: ToolchainHome}))
		Expect(mounts(c)).To(HaveKeyWithValue(BinDir, "garra-bin (ro)"))
		Expect(mounts(c)).To(HaveKeyWithValue(ToolchainHome, "home"))
		Expect(mounts(c)).To(HaveKeyWithValue(TmpDir, "tmp"))
		Expect(plain.Spec.InitContainers).To(BeEmpty())
		Expect(plain.Spec.Containers[0].Image).To(Equal(testImages[1]))
		Expect(plain.Spec.Containers[0].Command[0]).To(Equal("garra"))
		checkRestricted(GinkgoT(), own.Spec, false)

		By("both pods pass the restricted admission, in a server-side dry run")
		Expect(dryRunPod(ns, "own-image", own)).To(Succeed())
		Expect(dryRunPod(ns, "default-image", plain)).To(Succeed())

		By("the same admission refuses the pod once its init container may escalate (so the check above can fail)")
		bad := *own.DeepCopy()
		bad.Spec.InitContainers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
		err := dryRunPod(ns, "escalating", bad)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
		Expect(err.Error()).To(And(ContainSubstring(`violates PodSecurity "restricted:latest"`), ContainSubstring("allowPrivilegeEscalation != false"),
			ContainSubstring(CopyContainer)))
		bad = *own.DeepCopy()
		bad.Spec.SecurityContext.RunAsNonRoot, bad.Spec.SecurityContext.RunAsUser = nil, nil
		bad.Spec.InitContainers[0].SecurityContext.RunAsNonRoot, bad.Spec.InitContainers[0].SecurityContext.RunAsUser = nil, nil
		err = dryRunPod(ns, "maybe-root", bad)
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
		Expect(err.Error()).To(ContainSubstring("runAsNonRoot != true"))
	})
})
