package controllers

import (
	"bytes"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// The credential values of the spec below: long and distinctive, so that a
// search for their bytes cannot match by chance.
const (
	inlineCredential   = "ghp_inlineCREDENTIAL_0123456789abcdef"
	attachedCredential = "tk_attachedCREDENTIAL_fedcba9876543210"
	rotatedCredential  = "ghp_rotatedCREDENTIAL_a1b2c3d4e5f6a7b8"
	foreignCredential  = "foreign_platformCREDENTIAL_99887766"
)

// sandboxReferences are the serialized Secrets and ConfigMaps a pod spec
// refers to (volumes, projections, variables), read from the API server.
func sandboxReferences(ns string, pod corev1.PodSpec) map[string][]byte {
	GinkgoHelper()
	out := map[string][]byte{}
	addSecret := func(name string) {
		out["Secret "+name] = marshal(get(ns, name, &corev1.Secret{}))
	}
	addConfigMap := func(name string) {
		out["ConfigMap "+name] = marshal(get(ns, name, &corev1.ConfigMap{}))
	}
	for _, v := range pod.Volumes {
		switch {
		case v.Secret != nil:
			addSecret(v.Secret.SecretName)
		case v.ConfigMap != nil:
			addConfigMap(v.ConfigMap.Name)
		case v.Projected != nil:
			for _, src := range v.Projected.Sources {
				if src.Secret != nil {
					addSecret(src.Secret.Name)
				}
				if src.ConfigMap != nil {
					addConfigMap(src.ConfigMap.Name)
				}
			}
		}
	}
	for _, c := range append(append([]corev1.Container(nil), pod.InitContainers...), pod.Containers...) {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				addSecret(e.ValueFrom.SecretKeyRef.Name)
			}
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				addConfigMap(e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
		for _, from := range c.EnvFrom {
			if from.SecretRef != nil {
				addSecret(from.SecretRef.Name)
			}
			if from.ConfigMapRef != nil {
				addConfigMap(from.ConfigMapRef.Name)
			}
		}
	}
	return out
}

func marshal(v any) []byte {
	GinkgoHelper()
	b, err := json.Marshal(v)
	must(err)
	return b
}

// holdsAny are the values that occur in data, raw or in the base64 a
// Secret's JSON carries.
func holdsAny(data []byte, values ...string) []string {
	var found []string
	for _, v := range values {
		b64 := marshal([]byte(v)) // "..." base64 of v, quoted
		if bytes.Contains(data, []byte(v)) || bytes.Contains(data, b64[1:len(b64)-1]) {
			found = append(found, v)
		}
	}
	return found
}

var _ = Describe("Credentials through the gateway", func() {
	It("copies credentials to the gateway only, keeps the CA, and rotates and revokes without a restart", func() {
		platform, team := newNamespace(), newNamespace()
		twoOrchestrators(platform)
		secret(platform, "gh", map[string]string{"token": inlineCredential})
		// A Secret of the server's namespace, named by a team's
		// Orchestrator: never read across namespaces.
		secret(platform, "platform-only", map[string]string{"key": foreignCredential})
		secret(team, "tickets", map[string]string{"api-key": attachedCredential})
		update(platform, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.AllowedOrchestrators = &garrav1alpha1.AllowedOrchestrators{Namespaces: &garrav1alpha1.OrchestratorNamespaces{From: garrav1alpha1.NamespacesFromAll}}
			o := &gs.Spec.Orchestrators[0]
			o.Sandbox.Egress = garrav1alpha1.EgressGateway
			o.Sandbox.EgressHosts = []string{"proxy.golang.org"}
			o.Credentials = []garrav1alpha1.CredentialSpec{githubCredential()}
		})
		teamOrchestrator(team, "ci", platform)
		Eventually(func() error {
			cur := get(team, "ci", &garrav1alpha1.Orchestrator{})
			cur.Spec.Sandbox.Egress = garrav1alpha1.EgressGateway
			cur.Spec.Credentials = []garrav1alpha1.CredentialSpec{{
				Name: "tickets", SecretRef: garrav1alpha1.SecretKeySelector{Name: "tickets", Key: "api-key"},
				Hosts: []string{"tickets.example.com"}, Inject: garrav1alpha1.CredentialInject{Header: "X-Api-Key", Scheme: garrav1alpha1.CredentialNone},
			}}
			return k8sClient.Update(ctx, cur)
		}, timeout, interval).Should(Succeed())
		teamKey := "cred." + team + "_ci.tickets"

		By("the tokens Secret holds each credential's value under cred.<member>.<name>")
		tokenValues := func() map[string]string {
			out := map[string]string{}
			for k, v := range secretDataNow(platform, "team-a-gateway-tokens") {
				out[k] = string(v)
			}
			return out
		}
		Eventually(tokenValues, timeout, interval).Should(And(
			HaveKeyWithValue("cred.badgood.github", inlineCredential),
			HaveKeyWithValue(teamKey, attachedCredential)))
		Eventually(func() bool { return exists(team, "ci-sandbox", &appsv1.Deployment{}) }, timeout, interval).Should(BeTrue())
		Eventually(func() string { return gatewayConfig(platform) }, timeout, interval).Should(And(
			ContainSubstring("listen: :3128"), ContainSubstring("file: "+TokensDir+"/"+teamKey)))
		quiet(platform)
		quiet(team)

		By("the CA is generated once, owned by the server, and the sandboxes get its certificate only")
		ca := get(platform, "team-a-gateway-egress-ca", &corev1.Secret{})
		Expect(ca.Type).To(Equal(corev1.SecretTypeTLS))
		Expect(metav1.IsControlledBy(ca, server(platform))).To(BeTrue())
		Expect(egressCAProblem(ca.Data["tls.crt"], ca.Data["tls.key"], time.Now())).To(BeEmpty())
		for _, at := range [][2]string{{platform, "team-a-sandbox-badgood"}, {team, "ci-sandbox"}} {
			own := secretData(at[0], at[1])
			Expect(own).To(HaveKeyWithValue(KeyEgressCA, ca.Data["tls.crt"]), at[1])
			Expect(own).NotTo(HaveKey("tls.key"), at[1])
			Expect(own).To(HaveLen(2), at[1]+": its token lines and the CA, nothing else")
		}

		By("no sandbox pod spec, variable or object it refers to holds any credential's bytes")
		all := []string{inlineCredential, attachedCredential, foreignCredential}
		for _, at := range [][2]string{{platform, "team-a-sandbox-badgood"}, {team, "ci-sandbox"}} {
			dep := get(at[0], at[1], &appsv1.Deployment{})
			Expect(holdsAny(marshal(dep), all...)).To(BeEmpty(), at[1]+" Deployment")
			env := podEnv(at[0], dep.Spec.Template.Spec.Containers[0])
			Expect(env).To(HaveKeyWithValue(EnvEgressProxy, "http://team-a-gateway."+platform+".svc:3128"))
			Expect(env).To(HaveKeyWithValue(EnvEgressCAFile, EgressCAFile))
			Expect(holdsAny(marshal(env), all...)).To(BeEmpty(), at[1]+" environment")
			refs := sandboxReferences(at[0], dep.Spec.Template.Spec)
			Expect(refs).NotTo(BeEmpty())
			for what, data := range refs {
				Expect(holdsAny(data, all...)).To(BeEmpty(), at[1]+" refers to "+what)
				Expect(string(data)).NotTo(ContainSubstring(string(ca.Data["tls.key"])), what)
			}
		}
		gw := get(platform, "team-a-gateway", &appsv1.Deployment{})
		Expect(gatewayFiles(platform, gw.Spec.Template.Spec)).To(HaveKeyWithValue(TokensDir+"/cred.badgood.github", inlineCredential))
		Expect(get(platform, "team-a-gateway", &corev1.Service{}).Spec.Ports).To(ContainElement(And(
			HaveField("Name", EgressPortName), HaveField("Port", int32(EgressPort)))))

		By("the attached sandbox's only way out is the gateway's proxy in the server's namespace, and kube-dns")
		np := get(team, "ci-sandbox", &networkingv1.NetworkPolicy{})
		Expect(np.Spec.Egress).To(HaveLen(2))
		Expect(np.Spec.Egress[0].To).To(HaveExactElements(And(
			HaveField("NamespaceSelector.MatchLabels", Equal(map[string]string{"kubernetes.io/metadata.name": platform})),
			HaveField("PodSelector.MatchLabels", HaveKeyWithValue(LabelComponent, ComponentGateway)),
			HaveField("IPBlock", BeNil()))))
		Expect(np.Spec.Egress[0].Ports).To(HaveExactElements(HaveField("Port.IntVal", int32(EgressPort))))

		By("the CA survives a reconcile unchanged, and that reconcile writes nothing")
		quiet(platform)
		quiet(team)
		// Objects only: the event recorder may still be patching the count
		// of an earlier event.
		objectWrites := writes.objects
		before, beforeTeam := objectWrites(platform), objectWrites(team)
		n := reconciles()
		update(platform, func(gs *garrav1alpha1.GarraServer) { gs.Annotations = map[string]string{"example.com/touched": "yes"} })
		Eventually(reconciles, timeout, interval).Should(BeNumerically(">", n))
		Consistently(func() []string { return objectWrites(platform) }, 3*time.Second, interval).Should(Equal(before))
		Expect(objectWrites(team)).To(Equal(beforeTeam))
		again := get(platform, "team-a-gateway-egress-ca", &corev1.Secret{})
		Expect(again.UID).To(Equal(ca.UID))
		Expect(again.ResourceVersion).To(Equal(ca.ResourceVersion))
		Expect(again.Data).To(Equal(ca.Data))

		By("a credential Secret in another namespace than the Orchestrator's is refused, naming the field")
		Eventually(func() error {
			cur := get(team, "ci", &garrav1alpha1.Orchestrator{})
			cur.Spec.Credentials = append(cur.Spec.Credentials[:1], garrav1alpha1.CredentialSpec{
				Name: "foreign", SecretRef: garrav1alpha1.SecretKeySelector{Name: "platform-only", Key: "key"},
				Hosts: []string{"foreign.example.com"},
			})
			return k8sClient.Update(ctx, cur)
		}, timeout, interval).Should(Succeed())
		Eventually(func() *metav1.Condition {
			return meta.FindStatusCondition(get(team, "ci", &garrav1alpha1.Orchestrator{}).Status.Conditions, garrav1alpha1.ConditionReady)
		}, timeout, interval).Should(And(
			HaveField("Status", BeEquivalentTo("False")),
			HaveField("Reason", garrav1alpha1.ReasonSecretMissing),
			HaveField("Message", And(ContainSubstring("spec.credentials[1].secretRef"), ContainSubstring("namespace "+team)))))
		Eventually(tokenValues, timeout, interval).Should(HaveKeyWithValue("cred."+team+"_ci.foreign", ""))
		Consistently(func() string { return condition(platform, "GatewayReady").Message }, "1s", interval).ShouldNot(
			ContainSubstring("platform-only"), "a team's Secret is its own status's business")
		Expect(holdsAny(marshal(secretData(platform, "team-a-gateway-tokens")), foreignCredential)).To(BeEmpty(),
			"the server's namespace's Secret of that name is never read for it")
		Eventually(func() error {
			cur := get(team, "ci", &garrav1alpha1.Orchestrator{})
			cur.Spec.Credentials = cur.Spec.Credentials[:1]
			return k8sClient.Update(ctx, cur)
		}, timeout, interval).Should(Succeed())
		Eventually(tokenValues, timeout, interval).ShouldNot(HaveKey("cred." + team + "_ci.foreign"))
		quiet(platform)
		quiet(team)

		By("rotating a source Secret changes the tokens Secret and no pod template")
		gwTmpl, gwGen := templateOf(platform, "team-a-gateway")
		sbTmpl, sbGen := templateOf(platform, "team-a-sandbox-badgood")
		ciTmpl, ciGen := templateOf(team, "ci-sandbox")
		gh := get(platform, "gh", &corev1.Secret{})
		gh.Data["token"] = []byte(rotatedCredential)
		must(k8sClient.Update(ctx, gh))
		Eventually(tokenValues, timeout, interval).Should(HaveKeyWithValue("cred.badgood.github", rotatedCredential))
		Expect(tokenValues()).To(HaveKeyWithValue(teamKey, attachedCredential))
		quiet(platform)
		for _, tc := range []struct {
			ns, name string
			tmpl     corev1.PodTemplateSpec
			gen      int64
		}{{platform, "team-a-gateway", gwTmpl, gwGen}, {platform, "team-a-sandbox-badgood", sbTmpl, sbGen}, {team, "ci-sandbox", ciTmpl, ciGen}} {
			tmpl, gen := templateOf(tc.ns, tc.name)
			Expect(tmpl).To(Equal(tc.tmpl), tc.name+" template")
			Expect(gen).To(Equal(tc.gen), tc.name+" generation")
		}
		Expect(holdsAny(marshal(get(platform, "team-a-sandbox-badgood", &appsv1.Deployment{})), rotatedCredential)).To(BeEmpty())
		Expect(holdsAny(marshal(secretData(platform, "team-a-sandbox-badgood")), rotatedCredential)).To(BeEmpty())

		By("removing a credential removes its key, again without a restart")
		update(platform, func(gs *garrav1alpha1.GarraServer) { gs.Spec.Orchestrators[0].Credentials = nil })
		Eventually(tokenValues, timeout, interval).ShouldNot(HaveKey("cred.badgood.github"))
		Eventually(func() string { return gatewayConfig(platform) }, timeout, interval).ShouldNot(ContainSubstring("cred.badgood.github"))
		quiet(platform)
		tmpl, gen := templateOf(platform, "team-a-gateway")
		Expect(tmpl).To(Equal(gwTmpl))
		Expect(gen).To(Equal(gwGen))

		By("the operator never wrote a credential's source Secret")
		for _, s := range []*corev1.Secret{get(platform, "gh", &corev1.Secret{}), get(team, "tickets", &corev1.Secret{})} {
			Expect(s.OwnerReferences).To(BeEmpty(), s.Name)
			for _, mf := range s.ManagedFields {
				Expect(mf.Manager).NotTo(Equal(FieldOwner), s.Name)
			}
		}
	})

	It("refuses credentials without egress: gateway, naming the field", func() {
		ns := newNamespace()
		twoOrchestrators(ns)
		secret(ns, "gh", map[string]string{"token": inlineCredential})
		update(ns, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[1].Credentials = []garrav1alpha1.CredentialSpec{githubCredential()}
		})
		Eventually(func() *metav1.Condition { return condition(ns, "Ready") }, timeout, interval).Should(And(
			HaveField("Reason", garrav1alpha1.ReasonInvalidSpec),
			HaveField("Message", ContainSubstring("spec.orchestrators[n8n].credentials need spec.orchestrators[n8n].sandbox.egress: gateway (it is internet)"))))
		Expect(exists(ns, "team-a-gateway-egress-ca", &corev1.Secret{})).To(BeFalse())
	})
})
