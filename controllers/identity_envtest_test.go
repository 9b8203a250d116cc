package controllers

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/authn"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/errkinds"
)

// identityServer is team-a with one orchestrator per mode.
func identityServer(ns string) *garrav1alpha1.GarraServer {
	GinkgoHelper()
	secret(ns, "llm-keys", map[string]string{"openrouter": "sk-or-test"})
	gs := &garrav1alpha1.GarraServer{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: ns},
		Spec: garrav1alpha1.GarraServerSpec{
			LLM: garrav1alpha1.LLMSpec{Provider: garrav1alpha1.ProviderOpenRouter, Model: "z-ai/glm-5.3-flash",
				APIKeySecretRef: &garrav1alpha1.SecretKeySelector{Name: "llm-keys", Key: "openrouter"}},
			Orchestrators: []garrav1alpha1.OrchestratorSpec{
				{Name: "robot", OrchestratorSettings: garrav1alpha1.OrchestratorSettings{
					Tools: []garrav1alpha1.Tool{"status"},
					Auth:  &garrav1alpha1.OrchestratorAuth{ServiceAccount: &garrav1alpha1.ServiceAccountAuth{Name: "robot"}},
				}},
				{Name: "web", OrchestratorSettings: garrav1alpha1.OrchestratorSettings{
					Tools: []garrav1alpha1.Tool{"status"},
					Auth:  &garrav1alpha1.OrchestratorAuth{OIDC: &garrav1alpha1.OIDCAuth{Issuer: "https://idp.example.com", Audience: "garra", Subject: "n8n-bot"}},
				}},
				{Name: "badgood", OrchestratorSettings: garrav1alpha1.OrchestratorSettings{Tools: []garrav1alpha1.Tool{"status"}}},
			},
		},
	}
	must(k8sClient.Create(ctx, gs))
	return gs
}

// asGateway is a client of TokenReviews as ns's team-a-gateway
// ServiceAccount: what the gateway pod holds.
func asGateway(ns string) authn.Reviewer {
	GinkgoHelper()
	cfg := rest.CopyConfig(testEnv.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + ns + ":team-a-gateway",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	cs, err := kubernetes.NewForConfig(cfg)
	must(err)
	return cs.AuthenticationV1().TokenReviews()
}

var _ = Describe("Orchestrator identity", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("binds the gateway's ServiceAccount to TokenReview while an orchestrator needs it, renders each mode, and cleans the binding up", func() {
		identityServer(ns)
		crb := &rbacv1.ClusterRoleBinding{}
		key := client.ObjectKey{Name: "garra-tokenreview-" + ns + "-team-a"}
		By("waiting for the binding to the TokenReview ClusterRole")
		Eventually(func() error { return k8sClient.Get(ctx, key, crb) }, timeout, interval).Should(Succeed())
		Expect(crb.RoleRef.Name).To(Equal(TokenReviewClusterRole))
		Expect(crb.Subjects).To(Equal([]rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "team-a-gateway"}}))
		role := &rbacv1.ClusterRole{}
		must(k8sClient.Get(ctx, client.ObjectKey{Name: TokenReviewClusterRole}, role))
		Expect(role.Rules).To(Equal([]rbacv1.PolicyRule{{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}}}))
		Expect(controllerutil.ContainsFinalizer(server(ns), TokenReviewFinalizer)).To(BeTrue())

		By("the gateway pod runs as its ServiceAccount with the token mounted")
		Eventually(func() string {
			d := &corev1.ServiceAccount{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team-a-gateway"}, d); err != nil {
				return ""
			}
			return d.Name
		}, timeout, interval).Should(Equal("team-a-gateway"))
		Eventually(func() string {
			d := &appsv1.Deployment{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team-a-gateway"}, d); err != nil {
				return ""
			}
			return d.Spec.Template.Spec.ServiceAccountName
		}, timeout, interval).Should(Equal("team-a-gateway"))
		t, _ := templateOf(ns, "team-a-gateway")
		Expect(t.Spec.AutomountServiceAccountToken).To(HaveValue(BeTrue()))

		By("the config: no token file for robot and web, their modes, the endpoint as audience")
		cm := get(ns, "team-a-gateway", &corev1.ConfigMap{})
		cfg := &config.Config{}
		must(yaml.Unmarshal([]byte(cm.Data[ConfigKey]), cfg))
		Expect(cfg.Gateway.Auth.Audience).To(Equal("http://team-a-gateway." + ns + ".svc:3888/mcp"))
		byName := map[string]config.Orchestrator{}
		for _, o := range cfg.Gateway.MCPHTTP.Orchestrators {
			byName[o.Name] = o
		}
		Expect(byName["robot"].KeyFile).To(BeEmpty())
		Expect(byName["robot"].Auth.ServiceAccount).To(Equal(&config.ServiceAccountAuth{Namespace: ns, Name: "robot"}))
		Expect(byName["web"].KeyFile).To(BeEmpty())
		Expect(byName["web"].Auth.OIDC.Subject).To(Equal("n8n-bot"))
		Expect(byName["badgood"].KeyFile).To(Equal(OrchTokenFile("badgood")))

		By("no bearer token is generated for robot or web; their sandbox token stays")
		Eventually(func() map[string][]byte { return secretData(ns, "team-a-orch-robot") }, timeout, interval).Should(HaveLen(1))
		Expect(secretData(ns, "team-a-orch-robot")).To(HaveKey(KeySandboxToken))
		Expect(secretData(ns, "team-a-orch-web")).To(HaveKey(KeySandboxToken))
		Expect(secretData(ns, "team-a-orch-web")).NotTo(HaveKey(KeyToken))
		Expect(secretData(ns, "team-a-orch-badgood")).To(HaveKey(KeyToken))
		Eventually(func() map[string][]byte { return secretData(ns, "team-a-gateway-tokens") }, timeout, interval).Should(And(
			HaveKey("robot"+SandboxKeySuffix), Not(HaveKey("robot")), Not(HaveKey("web")), HaveKey("badgood")))
		Eventually(func() []string {
			var ts []string
			for _, o := range server(ns).Status.Orchestrators {
				ts = append(ts, o.Name+"="+o.TokenSecret)
			}
			return ts
		}, timeout, interval).Should(ConsistOf("robot=", "web=", "badgood=team-a-orch-badgood"))

		By("robot back to the token mode: the binding and the finalizer go")
		update(ns, func(gs *garrav1alpha1.GarraServer) { gs.Spec.Orchestrators[0].Auth = nil })
		Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, key, &rbacv1.ClusterRoleBinding{})) }, timeout, interval).Should(BeTrue())
		Eventually(func() bool { return controllerutil.ContainsFinalizer(server(ns), TokenReviewFinalizer) }, timeout, interval).Should(BeFalse())

		By("a ServiceAccount again, then the GarraServer deleted: the binding goes with it")
		update(ns, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].Auth = &garrav1alpha1.OrchestratorAuth{ServiceAccount: &garrav1alpha1.ServiceAccountAuth{Name: "robot"}}
		})
		Eventually(func() error { return k8sClient.Get(ctx, key, &rbacv1.ClusterRoleBinding{}) }, timeout, interval).Should(Succeed())
		must(k8sClient.Delete(ctx, server(ns)))
		Eventually(func() bool { return apierrors.IsNotFound(k8sClient.Get(ctx, key, &rbacv1.ClusterRoleBinding{})) }, timeout, interval).Should(BeTrue())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team-a"}, &garrav1alpha1.GarraServer{}))
		}, timeout, interval).Should(BeTrue())
	})

	It("admits a TokenRequest token for the endpoint audience on a real API server and refuses the rest, reviewing within the cache bound", func() {
		cs, err := kubernetes.NewForConfig(testEnv.Config)
		must(err)
		reviewer := asGateway(ns)
		aud := "http://team-a-gateway." + ns + ".svc:3888/mcp"

		By("before the binding, the gateway's ServiceAccount may not review")
		_, err = reviewer.Create(ctx, &authv1.TokenReview{Spec: authv1.TokenReviewSpec{Token: "x"}}, metav1.CreateOptions{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "%v", err)
		identityServer(ns)
		Eventually(func() error {
			_, err := reviewer.Create(ctx, &authv1.TokenReview{Spec: authv1.TokenReviewSpec{Token: "x"}}, metav1.CreateOptions{})
			return err
		}, timeout, interval).Should(Succeed())

		for _, name := range []string{"robot", "intruder", "gone", "ephemeral"} {
			must(k8sClient.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}))
		}
		bound := secret(ns, "bound-object", map[string]string{"x": "y"})
		// 600 s is the shortest lifetime TokenRequest grants, so a real
		// expiry is not waited for here: tokens whose bound object or
		// ServiceAccount is deleted stand for the dead ones.
		token := func(sa string, aud string, boundTo *corev1.Secret) string {
			GinkgoHelper()
			req := &authv1.TokenRequest{Spec: authv1.TokenRequestSpec{Audiences: []string{aud}, ExpirationSeconds: new(int64(600))}}
			if boundTo != nil {
				req.Spec.BoundObjectRef = &authv1.BoundObjectReference{Kind: "Secret", APIVersion: "v1", Name: boundTo.Name, UID: boundTo.UID}
			}
			tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, req, metav1.CreateOptions{})
			must(err)
			return tr.Status.Token
		}
		good := token("robot", aud, nil)
		otherAud := token("robot", "https://elsewhere.example", nil)
		intruder := token("intruder", aud, nil)
		boundDead := token("robot", aud, bound)
		gone := token("gone", aud, nil)
		ephemeral := token("ephemeral", aud, nil)
		must(k8sClient.Delete(ctx, bound))
		must(k8sClient.Delete(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gone"}}))

		clock := time.Now()
		sa, err := authn.NewServiceAccounts(reviewer, []authn.ServiceAccountEntry{
			{Caller: "robot", Namespace: ns, Name: "robot"},
			{Caller: "gone", Namespace: ns, Name: "gone"},
			{Caller: "ephemeral", Namespace: ns, Name: "ephemeral"},
		}, authn.ServiceAccountOptions{Audience: aud, CacheFor: 10 * time.Second, Now: func() time.Time { return clock }})
		must(err)
		check := func(tok, caller string, kind errkinds.Kind) {
			GinkgoHelper()
			id, err := sa.Authenticate(ctx, tok)
			var got errkinds.Kind
			if err != nil {
				got = authn.KindOf(err)
			}
			Expect([]string{id.Caller, string(got)}).To(Equal([]string{caller, string(kind)}), "%v", err)
		}
		By("the right audience is admitted as its orchestrator")
		check(good, "robot", "")
		By("the same ServiceAccount with another audience, another ServiceAccount, a dead bound object, a deleted ServiceAccount: refused")
		check(otherAud, "", errkinds.WrongAudience)
		check(intruder, "", errkinds.IdentityNotAllowed)
		check(boundDead, "", errkinds.InvalidToken)
		check(gone, "", errkinds.InvalidToken)
		Expect(sa.Reviews()).To(Equal(int64(5)))

		By("within the bound the verdicts are reused: no new review")
		for range 10 {
			check(good, "robot", "")
			check(intruder, "", errkinds.IdentityNotAllowed)
		}
		Expect(sa.Reviews()).To(Equal(int64(5)))

		By("a ServiceAccount deleted after its token was admitted: admitted until the bound, refused after")
		check(ephemeral, "ephemeral", "")
		must(k8sClient.Delete(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ephemeral"}}))
		clock = clock.Add(9 * time.Second)
		check(ephemeral, "ephemeral", "")
		Expect(sa.Reviews()).To(Equal(int64(6)))
		clock = clock.Add(time.Second)
		Eventually(func() errkinds.Kind {
			_, err := sa.Authenticate(ctx, ephemeral)
			if err == nil {
				// The API server caches its own verdicts for a few
				// seconds: ask again once our bound has passed again
				// (polled each second, so the fake clock stays well
				// inside the token's 600 s).
				clock = clock.Add(10 * time.Second)
				return ""
			}
			return authn.KindOf(err)
		}, timeout, time.Second).Should(Equal(errkinds.InvalidToken))
		check(good, "robot", "")
		GinkgoWriter.Printf("TokenReviews sent: %d\n", sa.Reviews())
	})
})
