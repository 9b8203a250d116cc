package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/sandboxz"
)

// orchCondition is the condition typ of Orchestrator name in ns.
func orchCondition(ns, name, typ string) *metav1.Condition {
	GinkgoHelper()
	return meta.FindStatusCondition(get(ns, name, &garrav1alpha1.Orchestrator{}).Status.Conditions, typ)
}

// updateOrchestrator re-reads an Orchestrator, changes it and writes it back.
func updateOrchestrator(ns, name string, change func(*garrav1alpha1.Orchestrator)) {
	GinkgoHelper()
	Eventually(func() error {
		ob := get(ns, name, &garrav1alpha1.Orchestrator{})
		change(ob)
		return k8sClient.Update(ctx, ob)
	}, timeout, interval).Should(Succeed())
}

func attachedSummaryOf(ns string) *garrav1alpha1.AttachedOrchestratorsStatus {
	GinkgoHelper()
	return server(ns).Status.AttachedOrchestrators
}

var _ = Describe("Orchestrator status", func() {
	var platform, team string
	BeforeEach(func() {
		platform, team = newNamespace(), newNamespace()
		twoOrchestrators(platform)
		settled(platform, "badgood", "n8n")
		allowFrom(platform, garrav1alpha1.OrchestratorNamespaces{From: garrav1alpha1.NamespacesFromAll})
	})

	It("carries the server's ConfigApplied and Verified to the Orchestrator, and keeps counts on the server", func() {
		id := team + "/ci"
		teamOrchestrator(team, "ci", platform)
		Eventually(func() []string { return accepted(team, "ci") }, timeout, interval).Should(HaveExactElements("True", garrav1alpha1.ReasonAccepted, ContainSubstring(id)))

		By("a gateway without a replica has loaded nothing and checked nothing")
		Eventually(func() *metav1.Condition { return orchCondition(team, "ci", garrav1alpha1.ConditionConfigApplied) }, timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", garrav1alpha1.ReasonPending), HaveField("Message", ContainSubstring("not yet in the config"))))
		Expect(orchCondition(team, "ci", garrav1alpha1.ConditionVerified)).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", ReasonNotChecked)))
		Eventually(attachedSummaryOf, timeout, interval).WithArguments(platform).Should(And(
			HaveField("Accepted", int32(1)), HaveField("Refused", int32(0)), HaveField("Ready", int32(0)),
			HaveField("NotReady", ConsistOf(garrav1alpha1.AttachedOrchestratorProblem{Name: id, Reason: garrav1alpha1.ReasonProgressing}))))

		By("the gateway runs the rendered config and verified the sandbox: both turn True, with the toolchain, asked once for the server")
		markAvailable(platform, "team-a-gateway", 1)
		gateways.setReport(platform, sandboxz.Report{Sandboxes: map[string]sandboxz.Verdict{
			"badgood": {Verified: true, Message: "ok", Tools: 6},
			"n8n":     {Verified: true, Message: "ok", Tools: 6},
			id:        {Verified: true, Message: "the handshake listed 6 tools", Tools: 6, Toolchain: []string{"bash", "go"}},
		}})
		// The gateway runs whatever the ConfigMap holds by the time it is
		// asked: the hash is read again at each poll, since a pass may still
		// be rendering the change that made the condition Pending.
		loadsCurrent := func() *metav1.Condition {
			gateways.set(platform, ConfigHash(gatewayConfig(platform)), "")
			return orchCondition(team, "ci", garrav1alpha1.ConditionConfigApplied)
		}
		Eventually(loadsCurrent, timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", garrav1alpha1.ReasonApplied)))
		Eventually(func() *metav1.Condition { return orchCondition(team, "ci", garrav1alpha1.ConditionVerified) }, timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", garrav1alpha1.ReasonVerified), HaveField("Message", "the handshake listed 6 tools")))
		Expect(get(team, "ci", &garrav1alpha1.Orchestrator{}).Status.Toolchain).To(Equal([]string{"bash", "go"}))
		Expect(condition(platform, garrav1alpha1.ConditionVerified).Message).NotTo(ContainSubstring(id), "the server's condition is about its inline entries")

		By("its sandbox up: the server counts it ready, and lists nothing to look at")
		markAvailable(team, "ci-sandbox", 1)
		Eventually(attachedSummaryOf, timeout, interval).WithArguments(platform).Should(Equal(&garrav1alpha1.AttachedOrchestratorsStatus{
			Accepted: 1, Ready: 1, Verified: 1, ConfigApplied: 1}))

		By("a new generation of it is Pending until the gateway loads it")
		updateOrchestrator(team, "ci", func(ob *garrav1alpha1.Orchestrator) { ob.Spec.Tools = []garrav1alpha1.Tool{"status"} })
		Eventually(func() *metav1.Condition { return orchCondition(team, "ci", garrav1alpha1.ConditionConfigApplied) }, timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", garrav1alpha1.ReasonPending)))
		Expect(orchCondition(team, "ci", garrav1alpha1.ConditionConfigApplied).ObservedGeneration).To(Equal(get(team, "ci", &garrav1alpha1.Orchestrator{}).Generation))
		Eventually(loadsCurrent, timeout, interval).Should(HaveField("Reason", garrav1alpha1.ReasonApplied))

		By("a refused one is counted and named, with its reason, on the server")
		teamOrchestrator(platform, "badgood", "")
		Eventually(attachedSummaryOf, timeout, interval).WithArguments(platform).Should(And(
			HaveField("Accepted", int32(1)), HaveField("Refused", int32(1)),
			HaveField("NotReady", ConsistOf(garrav1alpha1.AttachedOrchestratorProblem{Name: platform + "/badgood", Reason: garrav1alpha1.ReasonNameClash}))))
		Expect(orchCondition(platform, "badgood", garrav1alpha1.ConditionVerified)).To(HaveField("Reason", garrav1alpha1.ReasonNotAccepted))

		By("the quota in force is on both statuses: its own over the server's default, field by field")
		update(platform, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.Quota = &garrav1alpha1.QuotaSpec{AskPerMinute: ptrTo(int32(10)), AgentPerMinute: ptrTo(int32(2))}
			gs.Spec.Orchestrators[0].Quota = &garrav1alpha1.QuotaSpec{AgentPerMinute: ptrTo(int32(1))}
		})
		updateOrchestrator(team, "ci", func(ob *garrav1alpha1.Orchestrator) {
			ob.Spec.Quota = &garrav1alpha1.QuotaSpec{AskPerMinute: ptrTo(int32(3)), LLMTokensPerDay: ptrTo(int64(50000))}
		})
		Eventually(func() *garrav1alpha1.QuotaSpec { return get(team, "ci", &garrav1alpha1.Orchestrator{}).Status.Quota }, timeout, interval).Should(Equal(
			&garrav1alpha1.QuotaSpec{AskPerMinute: ptrTo(int32(3)), AgentPerMinute: ptrTo(int32(2)), LLMTokensPerDay: ptrTo(int64(50000))}))
		Eventually(func() []*garrav1alpha1.QuotaSpec {
			var out []*garrav1alpha1.QuotaSpec
			for _, o := range server(platform).Status.Orchestrators {
				out = append(out, o.Quota)
			}
			return out
		}, timeout, interval).Should(HaveExactElements(
			Equal(&garrav1alpha1.QuotaSpec{AskPerMinute: ptrTo(int32(10)), AgentPerMinute: ptrTo(int32(1))}),
			Equal(&garrav1alpha1.QuotaSpec{AskPerMinute: ptrTo(int32(10)), AgentPerMinute: ptrTo(int32(2))})))

		By("at rest, no object is written")
		quiet(platform)
		quiet(team)
		p0, t0 := len(writes.objects(platform)), len(writes.objects(team))
		time.Sleep(3 * time.Second)
		Expect(append(writes.objects(platform)[p0:], writes.objects(team)[t0:]...)).To(BeEmpty())
	})

	It("refuses the later of two callers that would meet, naming both: object names and tokens", func() {
		By("an Orchestrator whose Deployment name is an inline entry's, in the server's namespace")
		update(platform, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators = append(gs.Spec.Orchestrators, garrav1alpha1.OrchestratorSpec{Name: "sandbox",
				OrchestratorSettings: garrav1alpha1.OrchestratorSettings{Tools: []garrav1alpha1.Tool{"status"}}})
		})
		settled(platform, "badgood", "n8n", "sandbox")
		inline := get(platform, "team-a-sandbox-sandbox", &appsv1.Deployment{})
		teamOrchestrator(platform, "team-a-sandbox", "")
		Eventually(func() []string { return accepted(platform, "team-a-sandbox") }, timeout, interval).Should(HaveExactElements(
			"False", garrav1alpha1.ReasonNameClash, And(
				ContainSubstring("Orchestrator "+platform+"/team-a-sandbox would write Deployment "+platform+"/team-a-sandbox-sandbox"),
				ContainSubstring("inline orchestrator sandbox (spec.orchestrators[sandbox])"))))
		Consistently(func() types.UID {
			return metav1.GetControllerOf(get(platform, "team-a-sandbox-sandbox", &appsv1.Deployment{})).UID
		}, "2s", interval).Should(Equal(server(platform).UID), "the inline entry keeps its Deployment")
		Expect(get(platform, "team-a-sandbox-sandbox", &appsv1.Deployment{}).Generation).To(Equal(inline.Generation))
		Expect(gatewayConfig(platform)).NotTo(ContainSubstring(platform + "/team-a-sandbox"))

		By("an Orchestrator whose token is an inline entry's: refused, and the server stays valid for everyone else")
		secret(team, "copied", map[string]string{"token": "n8n-bearer-0123456789abcdef0123456789"})
		ob := teamOrchestrator(team, "ci", platform)
		updateOrchestrator(team, "ci", func(o *garrav1alpha1.Orchestrator) {
			o.Spec.TokenSecretRef = &garrav1alpha1.SecretKeySelector{Name: "copied", Key: "token"}
		})
		Eventually(func() []string { return accepted(team, "ci") }, timeout, interval).Should(HaveExactElements(
			"False", garrav1alpha1.ReasonTokenClash, And(ContainSubstring("copied holds the same token as"), ContainSubstring("inline orchestrator n8n"),
				Not(ContainSubstring("n8n-bearer")))))
		Expect(gatewayConfig(platform)).NotTo(ContainSubstring(team + "/ci"))
		Expect(secretData(platform, "team-a-gateway-tokens")).NotTo(HaveKey(team + "_ci"))
		Expect(condition(platform, garrav1alpha1.ConditionReady).Reason).NotTo(Equal(garrav1alpha1.ReasonInvalidSpec))
		Expect(exists(team, "ci-sandbox", &appsv1.Deployment{})).To(BeFalse())

		By("a token of its own: accepted")
		secret(team, "own", map[string]string{"token": "team-b-own-token-0123456789abcdef"})
		updateOrchestrator(team, "ci", func(o *garrav1alpha1.Orchestrator) {
			o.Spec.TokenSecretRef = &garrav1alpha1.SecretKeySelector{Name: "own", Key: "token"}
		})
		Eventually(func() []string { return accepted(team, "ci") }, timeout, interval).Should(HaveExactElements("True", garrav1alpha1.ReasonAccepted, ContainSubstring(OrchestratorID(ob))))
		Eventually(func() []byte { return secretDataNow(platform, "team-a-gateway-tokens")[team+"_ci"] }, timeout, interval).Should(Equal([]byte("team-b-own-token-0123456789abcdef")))
	})

	It("keeps one team's failure to its own Orchestrator: a full ResourceQuota does not stop the others", func() {
		By("team's namespace allows no Service (the quota's status is the quota controller's, which envtest lacks)")
		q := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "no-services", Namespace: team},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceServices: resource.MustParse("0")}},
		}
		must(k8sClient.Create(ctx, q))
		q.Status = corev1.ResourceQuotaStatus{Hard: q.Spec.Hard, Used: corev1.ResourceList{corev1.ResourceServices: resource.MustParse("0")}}
		must(k8sClient.Status().Update(ctx, q))
		other := newNamespace()
		teamOrchestrator(team, "ci", platform)
		teamOrchestrator(other, "ci", platform)

		By("its Ready says why, naming the quota; the other team's is provisioned, and the server is not failed")
		Eventually(func() *metav1.Condition { return orchCondition(team, "ci", garrav1alpha1.ConditionReady) }, timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", garrav1alpha1.ReasonApplyFailed), HaveField("Message", ContainSubstring("no-services"))))
		Eventually(func() bool { return exists(other, "ci-sandbox", &corev1.Service{}) }, timeout, interval).Should(BeTrue())
		Expect(condition(platform, garrav1alpha1.ConditionReady).Reason).NotTo(Equal(garrav1alpha1.ReasonApplyFailed))
		Eventually(attachedSummaryOf, timeout, interval).WithArguments(platform).Should(
			HaveField("NotReady", ContainElement(garrav1alpha1.AttachedOrchestratorProblem{Name: team + "/ci", Reason: garrav1alpha1.ReasonApplyFailed})))

		By("the quota raised: the retry provisions it")
		must(k8sClient.Delete(ctx, q))
		Eventually(func() bool { return exists(team, "ci-sandbox", &corev1.Service{}) }, 2*MemberRetry, interval).Should(BeTrue())
		Eventually(func() string { return orchCondition(team, "ci", garrav1alpha1.ConditionReady).Reason }, timeout, interval).Should(Equal(garrav1alpha1.ReasonProgressing))
	})

	It("keeps a team's missing Secret to its own Orchestrator: the server's GatewayReady stays True, other teams are unaffected", func() {
		markAvailable(platform, "team-a-gateway", 1)
		Eventually(func() *metav1.Condition { return condition(platform, garrav1alpha1.ConditionGatewayReady) }, timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", garrav1alpha1.ReasonAvailable)))
		other := newNamespace()
		teamOrchestrator(other, "ci", platform)
		named := func(ns, name, tokenSecret string) {
			ob := &garrav1alpha1.Orchestrator{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: garrav1alpha1.AttachedOrchestratorSpec{
					ServerRef: garrav1alpha1.ServerReference{Name: "team-a", Namespace: platform},
					OrchestratorSettings: garrav1alpha1.OrchestratorSettings{
						Tools:          []garrav1alpha1.Tool{"status"},
						TokenSecretRef: &garrav1alpha1.SecretKeySelector{Name: tokenSecret, Key: "token"},
					},
				},
			}
			must(k8sClient.Create(ctx, ob))
			DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ob))).To(Succeed()) })
		}

		By("team's Orchestrator names a token Secret its namespace lacks; so does one in the server's own namespace")
		named(team, "ci", "ci-bearer")
		named(platform, "ops", "ops-bearer")
		for _, ob := range []struct{ ns, name, secret string }{{team, "ci", "ci-bearer"}, {platform, "ops", "ops-bearer"}} {
			Eventually(func() *metav1.Condition { return orchCondition(ob.ns, ob.name, garrav1alpha1.ConditionReady) }, timeout, interval).Should(And(
				HaveField("Status", metav1.ConditionFalse), HaveField("Reason", garrav1alpha1.ReasonSecretMissing),
				HaveField("Message", And(ContainSubstring("spec.tokenSecretRef: Secret "+ob.secret+" key token"), ContainSubstring("namespace "+ob.ns)))))
		}

		By("the server has rendered them (no token accepted for either), and its GatewayReady says nothing of them")
		Eventually(func() string { return gatewayConfig(platform) }, timeout, interval).Should(And(
			ContainSubstring("name: "+team+"/ci"), ContainSubstring("name: "+platform+"/ops"), ContainSubstring("name: "+other+"/ci")))
		quiet(platform)
		Consistently(func() *metav1.Condition { return condition(platform, garrav1alpha1.ConditionGatewayReady) }, "2s", interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", garrav1alpha1.ReasonAvailable)))
		Expect(eventReasons(platform)).NotTo(ContainElement(garrav1alpha1.EventSecretMissing))

		By("the other team's Orchestrator is unaffected: accepted, and Ready once its sandbox is")
		Expect(accepted(other, "ci")).To(HaveExactElements("True", garrav1alpha1.ReasonAccepted, ContainSubstring(other+"/ci")))
		markAvailable(other, "ci-sandbox", 1)
		Eventually(func() *metav1.Condition { return orchCondition(other, "ci", garrav1alpha1.ConditionReady) }, timeout, interval).Should(
			HaveField("Status", metav1.ConditionTrue))

		By("the team creates its Secret: its Orchestrator waits for its sandbox instead")
		secret(team, "ci-bearer", map[string]string{"token": "team-ci-own-token-0123456789abcdef"})
		Eventually(func() string { return orchCondition(team, "ci", garrav1alpha1.ConditionReady).Reason }, timeout, interval).Should(Equal(garrav1alpha1.ReasonProgressing))

		By("a Secret of the server's own still counts on it")
		update(platform, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.LLM.APIKeySecretRef = &garrav1alpha1.SecretKeySelector{Name: "llm-keys-absent", Key: "openrouter"}
		})
		Eventually(func() *metav1.Condition { return condition(platform, garrav1alpha1.ConditionGatewayReady) }, timeout, interval).Should(And(
			HaveField("Reason", garrav1alpha1.ReasonSecretMissing),
			HaveField("Message", And(ContainSubstring("spec.llm.apiKeySecretRef"), Not(ContainSubstring("ops-bearer"))))))
	})

	It("rotates an attached Orchestrator's token when the team annotates it, with the server's overlap", func() {
		update(platform, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.TokenRotationGracePeriod = &metav1.Duration{Duration: 3 * time.Second}
		})
		teamOrchestrator(team, "ci", platform)
		Eventually(func() []byte { return secretDataNow(platform, "team-a-gateway-tokens")[team+"_ci"] }, timeout, interval).ShouldNot(BeEmpty())
		Eventually(func() bool { return exists(team, "ci-sandbox", &corev1.Secret{}) }, timeout, interval).Should(BeTrue())
		// The Deployment is applied after the token Secrets, in the same pass.
		Eventually(func() bool { return exists(team, "ci-sandbox", &appsv1.Deployment{}) }, timeout, interval).Should(BeTrue())
		old := secretData(team, "ci-token")
		sbTmpl, _ := templateOf(team, "ci-sandbox")

		updateOrchestrator(team, "ci", func(o *garrav1alpha1.Orchestrator) {
			o.Annotations = map[string]string{garrav1alpha1.AnnotationRotateToken: "now"}
		})
		Eventually(func() []byte { return secretDataNow(team, "ci-token")["token"] }, timeout, interval).Should(And(Not(BeEmpty()), Not(Equal(old["token"]))))
		cur := secretData(team, "ci-token")
		Expect(cur["sandbox-token"]).NotTo(Equal(old["sandbox-token"]))
		Eventually(func() string { return string(secretData(platform, "team-a-gateway-tokens")[team+"_ci"]) }, timeout, interval).Should(
			Equal(string(cur["token"]) + "\n" + string(old["token"])))
		Eventually(func() string { return string(secretData(team, "ci-sandbox")[KeySandboxToken]) }, timeout, interval).Should(
			Equal(string(old["sandbox-token"]) + "\n" + string(cur["sandbox-token"])))
		Eventually(func() map[string]string { return get(team, "ci", &garrav1alpha1.Orchestrator{}).Annotations }, timeout, interval).ShouldNot(HaveKey(garrav1alpha1.AnnotationRotateToken))
		Eventually(func() *garrav1alpha1.TokenRotationStatus {
			return get(team, "ci", &garrav1alpha1.Orchestrator{}).Status.TokenRotation
		}, timeout, interval).ShouldNot(BeNil())
		Expect(eventNotes(team, garrav1alpha1.EventTokenRotated)).To(ContainElement(ContainSubstring("new tokens in Secret ci-token")), "the team reads the event in its namespace")

		By("after the grace only the new tokens remain, and the status says so")
		Eventually(func() string { return string(secretData(platform, "team-a-gateway-tokens")[team+"_ci"]) }, timeout, interval).Should(Equal(string(cur["token"])))
		Eventually(func() *garrav1alpha1.TokenRotationStatus {
			return get(team, "ci", &garrav1alpha1.Orchestrator{}).Status.TokenRotation
		}, timeout, interval).Should(BeNil())
		Expect(secretData(team, "ci-token")).To(Equal(cur), "no second rotation")
		tmpl, _ := templateOf(team, "ci-sandbox")
		Expect(tmpl).To(Equal(sbTmpl), "no rotation rolls the sandbox")
	})

	It("moves an inline entry to an Orchestrator keeping its token and its workspace, as the README says", func() {
		id := platform + "/badgood"
		claimUID := get(platform, "team-a-ws-badgood", &corev1.PersistentVolumeClaim{}).UID
		token := secretData(platform, "team-a-orch-badgood")["token"]
		Expect(secretData(platform, "team-a-gateway-tokens")).To(HaveKeyWithValue("badgood", token))

		By("1. retain the inline entry's workspace: the claim loses its owner")
		update(platform, func(gs *garrav1alpha1.GarraServer) { gs.Spec.Orchestrators[0].Workspace.Retain = true })
		Eventually(func() []metav1.OwnerReference {
			return get(platform, "team-a-ws-badgood", &corev1.PersistentVolumeClaim{}).OwnerReferences
		}, timeout, interval).Should(BeEmpty())

		By("2. copy its token into a Secret of the Orchestrator's namespace")
		secret(platform, "badgood-token-moved", map[string]string{"token": string(token)})

		By("3. create the Orchestrator, naming the copy and adopting the claim: refused while the inline entry is there")
		ob := &garrav1alpha1.Orchestrator{
			ObjectMeta: metav1.ObjectMeta{Name: "badgood", Namespace: platform},
			Spec: garrav1alpha1.AttachedOrchestratorSpec{
				ServerRef: garrav1alpha1.ServerReference{Name: "team-a"},
				OrchestratorSettings: garrav1alpha1.OrchestratorSettings{
					Tools:          []garrav1alpha1.Tool{"status", "agent"},
					TokenSecretRef: &garrav1alpha1.SecretKeySelector{Name: "badgood-token-moved", Key: "token"},
					Workspace:      garrav1alpha1.WorkspaceSpec{ClaimName: "team-a-ws-badgood", Retain: true},
				},
			},
		}
		must(k8sClient.Create(ctx, ob))
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, ob))).To(Succeed()) })
		Eventually(func() []string { return accepted(platform, "badgood") }, timeout, interval).Should(HaveExactElements(
			"False", garrav1alpha1.ReasonNameClash, ContainSubstring("spec.orchestrators[badgood]")))
		Expect(secretData(platform, "team-a-gateway-tokens")).To(HaveKeyWithValue("badgood", token), "the inline entry still serves")

		By("4. remove the inline entry: the Orchestrator attaches with the same token and the same claim")
		update(platform, func(gs *garrav1alpha1.GarraServer) { gs.Spec.Orchestrators = gs.Spec.Orchestrators[1:] })
		Eventually(func() []string { return accepted(platform, "badgood") }, timeout, interval).Should(HaveExactElements("True", garrav1alpha1.ReasonAccepted, ContainSubstring(id)))
		Eventually(func() map[string][]byte { return secretDataNow(platform, "team-a-gateway-tokens") }, timeout, interval).Should(And(
			HaveKeyWithValue(platform+"_badgood", token), Not(HaveKey("badgood"))))
		Eventually(func() string { return gatewayConfig(platform) }, timeout, interval).Should(And(
			ContainSubstring("name: "+id), ContainSubstring("key_file: "+OrchTokenFile(platform+"_badgood"))))
		Eventually(func() bool { return exists(platform, "badgood-sandbox", &appsv1.Deployment{}) }, timeout, interval).Should(BeTrue())
		var claimVolume string
		for _, v := range get(platform, "badgood-sandbox", &appsv1.Deployment{}).Spec.Template.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				claimVolume = v.PersistentVolumeClaim.ClaimName
			}
		}
		Expect(claimVolume).To(Equal("team-a-ws-badgood"))
		Eventually(func() bool { return exists(platform, "team-a-sandbox-badgood", &appsv1.Deployment{}) }, timeout, interval).Should(BeFalse(), "the inline sandbox goes")
		Consistently(func() types.UID {
			return get(platform, "team-a-ws-badgood", &corev1.PersistentVolumeClaim{}).UID
		}, "2s", interval).Should(Equal(claimUID), "the same claim, never deleted")
		pvc := get(platform, "team-a-ws-badgood", &corev1.PersistentVolumeClaim{})
		Expect(pvc.Labels).To(And(HaveKeyWithValue(LabelOrchestrator, "badgood"), HaveKeyWithValue(LabelNamespace, platform)))
		Expect(pvc.OwnerReferences).To(BeEmpty(), "retained: deleting the Orchestrator keeps it")
		Expect(get(platform, "badgood", &garrav1alpha1.Orchestrator{}).Status.WorkspaceClaim).To(Equal("team-a-ws-badgood"))
	})
})
