package controllers

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// teamOrchestrator creates Orchestrator name in ns, attaching to team-a of
// namespace server.
func teamOrchestrator(ns, name, server string) *garrav1alpha1.Orchestrator {
	GinkgoHelper()
	ob := &garrav1alpha1.Orchestrator{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: garrav1alpha1.AttachedOrchestratorSpec{
			ServerRef: garrav1alpha1.ServerReference{Name: "team-a", Namespace: server},
			OrchestratorSettings: garrav1alpha1.OrchestratorSettings{
				Tools: []garrav1alpha1.Tool{"status", "agent"},
			},
		},
	}
	must(k8sClient.Create(ctx, ob))
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ob))).To(Succeed()) })
	return ob
}

// accepted is ob's Accepted condition as status, reason and message.
func accepted(ns, name string) []string {
	GinkgoHelper()
	ob := get(ns, name, &garrav1alpha1.Orchestrator{})
	c := meta.FindStatusCondition(ob.Status.Conditions, garrav1alpha1.ConditionAccepted)
	if c == nil {
		return nil
	}
	return []string{string(c.Status), c.Reason, c.Message}
}

// exists reports whether an object of obj's kind is named name in ns.
func exists(ns, name string, obj client.Object) bool {
	GinkgoHelper()
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return false
	}
	must(err)
	return obj.GetDeletionTimestamp() == nil
}

func gatewayConfig(ns string) string {
	GinkgoHelper()
	return get(ns, "team-a-gateway", &corev1.ConfigMap{}).Data[ConfigKey]
}

func allowFrom(ns string, rule garrav1alpha1.OrchestratorNamespaces) {
	GinkgoHelper()
	update(ns, func(gs *garrav1alpha1.GarraServer) {
		gs.Spec.AllowedOrchestrators = &garrav1alpha1.AllowedOrchestrators{Namespaces: &rule}
	})
}

var _ = Describe("Orchestrator", func() {
	var platform, team string
	BeforeEach(func() {
		platform, team = newNamespace(), newNamespace()
		twoOrchestrators(platform)
		settled(platform, "badgood", "n8n")
	})

	It("attaches, is refused and detaches under each from mode and a namespace label change", func() {
		id := team + "/ci"
		sandboxObjects := map[string]client.Object{
			"ci-sandbox": &appsv1.Deployment{}, "ci-ws": &corev1.PersistentVolumeClaim{}, "ci-token": &corev1.Secret{},
		}
		provisioned := func() bool {
			for name, obj := range sandboxObjects {
				if !exists(team, name, obj) {
					return false
				}
			}
			return exists(team, "ci-sandbox", &corev1.Secret{}) && exists(team, "ci-sandbox", &corev1.Service{}) &&
				exists(team, "ci-sandbox", &corev1.ServiceAccount{}) && exists(team, "ci-sandbox", &networkingv1.NetworkPolicy{})
		}

		By("the default rule, Same, refuses another namespace's Orchestrator, naming the field")
		teamOrchestrator(team, "ci", platform)
		Eventually(func() []string { return accepted(team, "ci") }, timeout, interval).Should(HaveExactElements(
			"False", garrav1alpha1.ReasonNotAllowedByServer, And(ContainSubstring("spec.allowedOrchestrators.namespaces"), ContainSubstring("Same"))))
		Expect(server(platform).Spec.AllowedOrchestrators.Namespaces.From).To(Equal(garrav1alpha1.NamespacesFromSame), "the default is written")
		Consistently(func() bool { return exists(team, "ci-sandbox", &appsv1.Deployment{}) }, "2s", interval).Should(BeFalse(), "nothing is provisioned")
		Expect(exists(team, "ci-token", &corev1.Secret{})).To(BeFalse())
		Expect(gatewayConfig(platform)).NotTo(ContainSubstring(id))

		By("All admits it: its objects are in its namespace, owned by it, and the gateway knows it as NAMESPACE/NAME")
		allowFrom(platform, garrav1alpha1.OrchestratorNamespaces{From: garrav1alpha1.NamespacesFromAll})
		Eventually(func() []string { return accepted(team, "ci") }, timeout, interval).Should(HaveExactElements(
			"True", garrav1alpha1.ReasonAccepted, ContainSubstring(id)))
		Eventually(provisioned, timeout, interval).Should(BeTrue())
		ob := get(team, "ci", &garrav1alpha1.Orchestrator{})
		for name, obj := range sandboxObjects {
			get(team, name, obj)
			ref := metav1.GetControllerOf(obj)
			Expect(ref).NotTo(BeNil(), name)
			Expect(ref.UID).To(Equal(ob.UID), name+" is owned by the Orchestrator, so it goes with it")
		}
		Eventually(func() string { return gatewayConfig(platform) }, timeout, interval).Should(ContainSubstring("name: " + id))
		tokens := secretData(platform, "team-a-gateway-tokens")
		Expect(tokens).To(HaveKeyWithValue(team+"_ci", secretData(team, "ci-token")["token"]))

		By("its sandbox pod reads no Secret but its own, in its own namespace")
		pod := get(team, "ci-sandbox", &appsv1.Deployment{}).Spec.Template.Spec
		Expect(pod.ServiceAccountName).To(Equal("ci-sandbox"))
		Expect(podFiles(team, pod, "token", SecretsDir)).To(Equal(map[string]string{
			SandboxTokenPath: string(secretData(team, "ci-token")["sandbox-token"]),
		}))
		for _, v := range pod.Volumes {
			Expect(v.Secret).To(BeNil(), v.Name)
			if v.Projected != nil {
				for _, src := range v.Projected.Sources {
					if src.Secret != nil {
						Expect(src.Secret.Name).To(Equal("ci-sandbox"), v.Name)
					}
				}
			}
		}
		for _, c := range append(pod.InitContainers, pod.Containers...) {
			Expect(envFrom(c)).To(HaveKeyWithValue("HOME", "=/tmp"))
			Expect(envFrom(c)).To(HaveLen(1), "no variable from a Secret")
		}

		By("its NetworkPolicy admits the gateway from the server's namespace")
		np := get(team, "ci-sandbox", &networkingv1.NetworkPolicy{})
		Expect(np.Spec.Ingress).To(HaveLen(1))
		Expect(np.Spec.Ingress[0].From).To(HaveLen(1))
		peer := np.Spec.Ingress[0].From[0]
		Expect(peer.NamespaceSelector).NotTo(BeNil())
		Expect(peer.NamespaceSelector.MatchLabels).To(Equal(map[string]string{"kubernetes.io/metadata.name": platform}))
		Expect(peer.PodSelector.MatchLabels).To(HaveKeyWithValue(LabelComponent, ComponentGateway))

		By("its status says where to call and which Secret holds its token")
		markAvailable(team, "ci-sandbox", 1)
		Eventually(func() bool {
			return meta.IsStatusConditionTrue(get(team, "ci", &garrav1alpha1.Orchestrator{}).Status.Conditions, garrav1alpha1.ConditionReady)
		}, timeout, interval).Should(BeTrue())
		st := get(team, "ci", &garrav1alpha1.Orchestrator{}).Status
		Expect(st.Identity).To(Equal(id))
		Expect(st.TokenSecret).To(Equal("ci-token"))
		Expect(st.WorkspaceClaim).To(Equal("ci-ws"))
		Expect(st.Endpoint).To(Equal(Endpoint(server(platform))))
		Expect(st.SandboxEndpoint).To(Equal("http://ci-sandbox." + team + ".svc:8080/mcp"))

		By("a Selector its namespace does not match detaches it: the sandbox goes, its workspace and token stay")
		allowFrom(platform, garrav1alpha1.OrchestratorNamespaces{From: garrav1alpha1.NamespacesFromSelector,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"garra.example/team": "yes"}}})
		Eventually(func() []string { return accepted(team, "ci") }, timeout, interval).Should(HaveExactElements(
			"False", garrav1alpha1.ReasonNotAllowedByServer, ContainSubstring("garra.example/team=yes")))
		Eventually(func() bool { return exists(team, "ci-sandbox", &appsv1.Deployment{}) }, timeout, interval).Should(BeFalse())
		Eventually(func() string { return gatewayConfig(platform) }, timeout, interval).ShouldNot(ContainSubstring(id))
		Expect(exists(team, "ci-ws", &corev1.PersistentVolumeClaim{})).To(BeTrue(), "a detached workspace is kept")
		token := secretData(team, "ci-token")["token"]

		By("labelling the namespace attaches it again, with the same token")
		Eventually(func() error {
			n := &corev1.Namespace{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Name: team}, n); err != nil {
				return err
			}
			if n.Labels == nil {
				n.Labels = map[string]string{}
			}
			n.Labels["garra.example/team"] = "yes"
			return k8sClient.Update(ctx, n)
		}, timeout, interval).Should(Succeed())
		Eventually(func() []string { return accepted(team, "ci") }, timeout, interval).Should(HaveExactElements(
			"True", garrav1alpha1.ReasonAccepted, ContainSubstring(id)))
		Eventually(provisioned, timeout, interval).Should(BeTrue())
		Eventually(func() []byte { return secretData(platform, "team-a-gateway-tokens")[team+"_ci"] }, timeout, interval).Should(Equal(token))

		By("deleting the Orchestrator takes it out of the gateway")
		must(k8sClient.Delete(ctx, ob))
		Eventually(func() string { return gatewayConfig(platform) }, timeout, interval).ShouldNot(ContainSubstring(id))
		Eventually(func() map[string][]byte { return secretData(platform, "team-a-gateway-tokens") }, timeout, interval).ShouldNot(HaveKey(team + "_ci"))
	})

	It("is refused for a missing server and for a name an inline entry has, naming both", func() {
		By("a serverRef to nothing")
		teamOrchestrator(team, "lost", "nowhere")
		Eventually(func() []string { return accepted(team, "lost") }, timeout, interval).Should(HaveExactElements(
			"False", garrav1alpha1.ReasonServerNotFound, ContainSubstring("no GarraServer team-a in namespace nowhere")))

		By("an Orchestrator in the server's namespace named as an inline entry")
		teamOrchestrator(platform, "badgood", "")
		Eventually(func() []string { return accepted(platform, "badgood") }, timeout, interval).Should(HaveExactElements(
			"False", garrav1alpha1.ReasonNameClash, And(ContainSubstring("spec.orchestrators[badgood]"), ContainSubstring("Orchestrator "+platform+"/badgood"))))
		Consistently(func() bool { return exists(platform, "badgood-sandbox", &appsv1.Deployment{}) }, "2s", interval).Should(BeFalse())

		By("one of the server's own namespace with another name is admitted by the default rule")
		teamOrchestrator(platform, "local", "")
		Eventually(func() []string { return accepted(platform, "local") }, timeout, interval).Should(HaveExactElements(
			"True", garrav1alpha1.ReasonAccepted, ContainSubstring(platform+"/local")))
		Eventually(func() bool { return exists(platform, "local-sandbox", &appsv1.Deployment{}) }, timeout, interval).Should(BeTrue())
		Expect(exists(platform, "team-a-sandbox-badgood", &appsv1.Deployment{})).To(BeTrue(), "the inline entry is untouched")
	})
})
