//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/controllers"
)

// teamLabel marks the namespaces the platform's server admits.
const teamLabel = "garra.example/e2e-team"

// asUser is a client of the cluster that acts as user: the API server
// authorizes every request as that user, as kubectl --as would.
func (k *cluster) asUser(user string) client.Client {
	GinkgoHelper()
	cfg := rest.CopyConfig(k.cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: k.c.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	return c
}

var _ = Describe("Two teams, each onboarded by its own user in its own namespace", Ordered, func() {
	type team struct {
		ns, user string
		c        client.Client // as the user
		token    string
		pod      *corev1.Pod
		svcIP    string
	}
	var (
		gs    *garrav1alpha1.GarraServer
		gw    *gatewayClient
		teams []*team
	)
	const orchName = "ci"

	BeforeAll(func(ctx SpecContext) {
		gs = newGarraServer(k.p, "teams-e2e")
		gs.Spec.AllowedOrchestrators = &garrav1alpha1.AllowedOrchestrators{Namespaces: &garrav1alpha1.OrchestratorNamespaces{
			From:     garrav1alpha1.NamespacesFromSelector,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{teamLabel: "yes"}},
		}}
		applyReady(ctx, gs)
		gw = gatewayOf(gs)

		for _, suffix := range []string{"a", "b"} {
			t := &team{ns: k.p.Namespace + "-team-" + suffix, user: "e2e-user-team-" + suffix}
			Expect(k.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: t.ns, Labels: map[string]string{teamLabel: "yes"}}})).To(Succeed())
			// The team's only right: the cluster's edit role in its own
			// namespace, to which the chart aggregates Orchestrators.
			Expect(k.c.Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "edit", Namespace: t.ns},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: t.user}},
			})).To(Succeed())
			Expect(k.provideVolumes(ctx, t.ns, orchName+"-ws")).To(Succeed())
			t.c = k.asUser(t.user)
			teams = append(teams, t)
		}
	}, NodeTimeout(6*time.Minute))

	AfterAll(func(ctx SpecContext) {
		for _, t := range teams {
			Expect(k.deleteAndWait(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: t.ns}})).To(Succeed())
			Expect(k.removeVolumes(ctx, t.ns)).To(Succeed())
		}
		if gs != nil {
			Expect(k.deleteAndWait(ctx, gs)).To(Succeed())
		}
	}, NodeTimeout(5*time.Minute))

	orchestrator := func(t *team) *garrav1alpha1.Orchestrator {
		size := resource.MustParse("1Gi")
		return &garrav1alpha1.Orchestrator{
			ObjectMeta: metav1.ObjectMeta{Name: orchName, Namespace: t.ns},
			Spec: garrav1alpha1.AttachedOrchestratorSpec{
				ServerRef: garrav1alpha1.ServerReference{Name: gs.Name, Namespace: gs.Namespace},
				OrchestratorSettings: garrav1alpha1.OrchestratorSettings{
					Tools:     []garrav1alpha1.Tool{garrav1alpha1.ToolStatus, garrav1alpha1.ToolAgent},
					Workspace: garrav1alpha1.WorkspaceSpec{StorageSpec: garrav1alpha1.StorageSpec{Size: size, StorageClassName: k.p.claimClass()}},
					Sandbox:   garrav1alpha1.SandboxSpec{Egress: garrav1alpha1.EgressNone},
				},
			},
		}
	}

	It("lets each user onboard in its own namespace only, and never see the other's", func(ctx SpecContext) {
		a, b := teams[0], teams[1]
		By("team-a's user may not create an Orchestrator in team-b's namespace, nor read its Secrets")
		err := a.c.Create(ctx, orchestrator(b))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
		err = a.c.List(ctx, &corev1.SecretList{}, client.InNamespace(b.ns))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "got %v", err)
		err = a.c.Get(ctx, client.ObjectKeyFromObject(gs), &garrav1alpha1.GarraServer{})
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "the platform's server is not the team's to read: %v", err)

		By("each user onboards in its own")
		for _, t := range teams {
			start := time.Now()
			Expect(t.c.Create(ctx, orchestrator(t))).To(Succeed(), t.user)
			Eventually(func(g Gomega) {
				ob := &garrav1alpha1.Orchestrator{}
				g.Expect(t.c.Get(ctx, client.ObjectKey{Namespace: t.ns, Name: orchName}, ob)).To(Succeed())
				for _, typ := range []string{garrav1alpha1.ConditionAccepted, garrav1alpha1.ConditionReady, garrav1alpha1.ConditionConfigApplied, garrav1alpha1.ConditionVerified} {
					c := meta.FindStatusCondition(ob.Status.Conditions, typ)
					g.Expect(c).NotTo(BeNil(), typ)
					g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", typ, c.Message)
				}
				g.Expect(ob.Status.Identity).To(Equal(t.ns + "/" + orchName))
				g.Expect(ob.Status.TokenSecret).To(Equal(orchName + "-token"))
			}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
			times.record("Orchestrator created by its team → Accepted, Ready, ConfigApplied, Verified", time.Since(start))

			// The user reads its token in its own namespace.
			sec := &corev1.Secret{}
			Expect(t.c.Get(ctx, client.ObjectKey{Namespace: t.ns, Name: orchName + "-token"}, sec)).To(Succeed())
			t.token = strings.TrimSpace(string(sec.Data[controllers.KeyToken]))
			Expect(t.token).NotTo(BeEmpty())
			t.pod, err = k.runningPod(ctx, t.ns, podLabels(gs, controllers.ComponentSandbox, orchName))
			Expect(err).NotTo(HaveOccurred())
			var svc corev1.Service
			Expect(k.c.Get(ctx, client.ObjectKey{Namespace: t.ns, Name: orchName + "-sandbox"}, &svc)).To(Succeed())
			t.svcIP = svc.Spec.ClusterIP
		}
		Expect(a.token).NotTo(Equal(b.token))
	}, NodeTimeout(10*time.Minute))

	It("runs each team's agent bash in its own sandbox, in its own namespace", func(ctx SpecContext) {
		for _, t := range teams {
			reqs := agentBash(ctx, gw, t.token, "Say where you run.", "echo ran-in-$(hostname) > /workspace/who; cat /workspace/who")
			Expect(reqs.Requests[1].RawBody).To(ContainSubstring("ran-in-"+t.pod.Name), "bash ran in %s's sandbox pod", t.ns)
			out, errOut, err := k.exec(ctx, t.ns, t.pod.Name, "cat", "/workspace/who")
			Expect(err).NotTo(HaveOccurred(), errOut)
			Expect(strings.TrimSpace(out)).To(Equal("ran-in-" + t.pod.Name))
		}
	}, NodeTimeout(5*time.Minute))

	It("keeps each team's sandbox away from the other's and from the API server (egress none)", func(ctx SpecContext) {
		if os.Getenv("NETPOL") == "0" {
			Skip("NetworkPolicy is not enforced on this cluster (NETPOL=0)")
		}
		var api corev1.Service
		Expect(k.c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, &api)).To(Succeed())
		probe := func(pod *corev1.Pod, host string, port int32) string {
			out, errOut, err := k.exec(ctx, pod.Namespace, pod.Name, "bash", "-c", fmt.Sprintf(probeScript, host, port, int(probeBound.Seconds())))
			Expect(err).NotTo(HaveOccurred(), "exec in %s: %s", pod.Name, errOut)
			return strings.TrimSpace(out)
		}
		closed := func(from *corev1.Pod, what, host string, port int32) {
			GinkgoHelper()
			Eventually(func() string { return probe(from, host, port) }).WithContext(ctx).
				WithTimeout(20*time.Second).WithPolling(time.Second).Should(Equal("closed"), "%s from %s/%s", what, from.Namespace, from.Name)
			Expect(probe(from, host, port)).To(Equal("closed"), "%s from %s/%s", what, from.Namespace, from.Name)
		}
		for i, t := range teams {
			other := teams[1-i]
			closed(t.pod, other.ns+"'s sandbox Service", other.svcIP, controllers.SandboxPort)
			closed(t.pod, other.ns+"'s sandbox pod", other.pod.Status.PodIP, controllers.SandboxPort)
			closed(t.pod, "the API server's Service", api.Spec.ClusterIP, 443)
		}
	}, NodeTimeout(3*time.Minute))
})
