package controllers

import (
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// aggregatedEdit plays the cluster role aggregation controller (part of
// kube-controller-manager, which envtest lacks) for the built-in edit
// role: a ClusterRole with the rules of every ClusterRole its
// aggregationRule selects, read from the API server's own edit.
func aggregatedEdit(name string) *rbacv1.ClusterRole {
	GinkgoHelper()
	edit := get("", "edit", &rbacv1.ClusterRole{})
	Expect(edit.AggregationRule).NotTo(BeNil())
	out := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, sel := range edit.AggregationRule.ClusterRoleSelectors {
		var list rbacv1.ClusterRoleList
		must(k8sClient.List(ctx, &list, client.MatchingLabels(sel.MatchLabels)))
		for _, cr := range list.Items {
			out.Rules = append(out.Rules, cr.Rules...)
		}
	}
	return out
}

// asUser is a client that acts as user, through impersonation: the API
// server's authorizer decides each request, as for a real user.
func asUser(user string) client.Client {
	GinkgoHelper()
	cfg := rest.CopyConfig(testEnv.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: testScheme})
	must(err)
	return c
}

var _ = Describe("Orchestrator RBAC", func() {
	It("lets a user who may only edit team-a onboard there, and nowhere else", func() {
		platform, teamA, teamB := newNamespace(), newNamespace(), newNamespace()
		twoOrchestrators(platform)

		By("installing the aggregated roles of config/rbac")
		for _, f := range []string{"orchestrator_editor_role.yaml", "orchestrator_viewer_role.yaml"} {
			data, err := os.ReadFile(filepath.Join("..", "config", "rbac", f))
			must(err)
			cr := &rbacv1.ClusterRole{}
			must(yaml.UnmarshalStrict(data, cr))
			Expect(client.IgnoreAlreadyExists(k8sClient.Create(ctx, cr))).To(Succeed())
		}
		edit := aggregatedEdit("test-aggregated-edit-" + teamA)
		must(k8sClient.Create(ctx, edit))
		DeferCleanup(func() { Expect(k8sClient.Delete(ctx, edit)).To(Succeed()) })

		By("binding alice to edit in team-a only")
		must(k8sClient.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "alice-edit", Namespace: teamA},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: edit.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
		}))
		alice := asUser("alice")
		orch := func(ns string) *garrav1alpha1.Orchestrator {
			return &garrav1alpha1.Orchestrator{
				ObjectMeta: metav1.ObjectMeta{Name: "ci", Namespace: ns},
				Spec:       garrav1alpha1.AttachedOrchestratorSpec{ServerRef: garrav1alpha1.ServerReference{Name: "team-a", Namespace: platform}},
			}
		}

		By("alice creates, reads and lists an Orchestrator in team-a")
		Eventually(func() error { return alice.Create(ctx, orch(teamA)) }, timeout, interval).Should(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8sClient.Delete(ctx, orch(teamA)))).To(Succeed()) })
		must(alice.Get(ctx, client.ObjectKey{Namespace: teamA, Name: "ci"}, &garrav1alpha1.Orchestrator{}))
		must(alice.List(ctx, &garrav1alpha1.OrchestratorList{}, client.InNamespace(teamA)))

		By("alice may neither create nor read anything of team-b's or the platform's")
		forbidden := func(err error) {
			GinkgoHelper()
			Expect(apierrors.IsForbidden(err)).To(BeTrue(), "want Forbidden, got %v", err)
		}
		forbidden(alice.Create(ctx, orch(teamB)))
		forbidden(alice.List(ctx, &garrav1alpha1.OrchestratorList{}, client.InNamespace(teamB)))
		forbidden(alice.Get(ctx, client.ObjectKey{Namespace: platform, Name: "team-a"}, &garrav1alpha1.GarraServer{}))
		forbidden(alice.List(ctx, &garrav1alpha1.OrchestratorList{}))

		By("nor change her Orchestrator's status, which only the operator writes")
		ob := &garrav1alpha1.Orchestrator{}
		must(alice.Get(ctx, client.ObjectKey{Namespace: teamA, Name: "ci"}, ob))
		ob.Status.Identity = "forged"
		forbidden(alice.Status().Update(ctx, ob))
	})
})
