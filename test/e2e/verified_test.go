//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/controllers"
	"github.com/garraia/garra/internal/sandboxz"
)

// The operator keeps the gateway and each sandbox on one token Secret, so
// no edit of it can part them: the operator derives the tokens Secret
// again and both pods read the same key. What can part them is a sandbox
// whose token comes from somewhere else — here its Deployment edited by
// hand to read another Secret, with the operator stopped so it does not
// put the Deployment back at once. Started again, the operator reports
// the refusal, then repairs the Deployment and reports it verified.
var _ = Describe("A sandbox that refuses the gateway's token", Ordered, func() {
	var (
		gs       *garrav1alpha1.GarraServer
		ownerKey string
		manager  client.ObjectKey
	)
	ns := func() string { return k.p.Namespace }
	const orchName = "solo"

	BeforeAll(func(ctx SpecContext) {
		gs = newGarraServer(k.p, "verify-e2e", orch{name: orchName, tools: []garrav1alpha1.Tool{garrav1alpha1.ToolStatus, garrav1alpha1.ToolAgent}})
		times.record("GarraServer with one sandbox applied → Ready", applyReady(ctx, gs))
		var err error
		ownerKey, err = k.secretValue(ctx, ns(), gs.Name+"-gateway", controllers.KeyAPIKey)
		Expect(err).NotTo(HaveOccurred())
		manager, err = k.managerDeployment(ctx)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			g.Expect(verifiedRow(ctx, gs, orchName)).To(HaveField("Verified", BeTrue()))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	}, NodeTimeout(6*time.Minute))

	AfterAll(func(ctx SpecContext) {
		// Whatever happened, the operator runs again for the specs after.
		Expect(k.scaleDeployment(ctx, manager, 1)).To(Succeed())
		if gs != nil {
			Expect(k.deleteAndWait(ctx, gs)).To(Succeed())
		}
	}, NodeTimeout(4*time.Minute))

	It("is Verified=False with TokenRefused, and Verified again once the operator repairs it", func(ctx SpecContext) {
		Expect(k.scaleDeployment(ctx, manager, 0)).To(Succeed())
		Expect(k.c.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns(), Name: "verify-e2e-hand-token"},
			StringData: map[string]string{controllers.KeySandboxToken: "a-token-the-gateway-does-not-hold"},
		})).To(Succeed())

		// Point the sandbox's token volume at the hand-made Secret.
		sandbox := client.ObjectKey{Namespace: ns(), Name: gs.Name + "-sandbox-" + orchName}
		start := time.Now()
		Eventually(func() error {
			d := &appsv1.Deployment{}
			if err := k.c.Get(ctx, sandbox, d); err != nil {
				return err
			}
			for i, v := range d.Spec.Template.Spec.Volumes {
				if v.Name == "token" && v.Projected != nil && len(v.Projected.Sources) == 1 && v.Projected.Sources[0].Secret != nil {
					d.Spec.Template.Spec.Volumes[i].Projected.Sources[0].Secret.Name = "verify-e2e-hand-token"
					d.Spec.Template.Spec.Volumes[i].Projected.Sources[0].Secret.Items = []corev1.KeyToPath{{Key: controllers.KeySandboxToken, Path: controllers.KeySandboxToken}}
					return k.c.Update(ctx, d)
				}
			}
			return fmt.Errorf("no projected token volume in %s", sandbox)
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())

		// The gateway's own verdict turns first (the operator is stopped).
		probe := controllers.HTTPSandboxProbe(dialer.httpClient())
		url := serviceURL(ns(), gs.Name+"-gateway", controllers.GatewayPort) + sandboxz.Path
		Eventually(func(g Gomega) {
			rep, err := probe(ctx, url, ownerKey)
			g.Expect(err).NotTo(HaveOccurred())
			v := rep.Sandboxes[orchName]
			g.Expect(v.Verified).To(BeFalse())
			g.Expect(v.Reason).To(Equal(sandboxz.TokenRefused), v.Message)
			g.Expect(v.Message).NotTo(ContainSubstring("a-token-the-gateway-does-not-hold"))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		times.record("sandbox token parted → gateway verdict TokenRefused", time.Since(start))

		// The operator, started again, shows the refusal in the status...
		// It repairs the Deployment in the same pass, and the gateway sees
		// the repaired sandbox within seconds, so the refusal is in the
		// status only briefly: the watch starts with the scale-up, not once
		// the manager's pod is reported available.
		Expect(k.setReplicas(ctx, manager, 1)).To(Succeed())
		start = time.Now()
		Eventually(func(g Gomega) {
			row := verifiedRow(ctx, gs, orchName)
			g.Expect(row.Verified).To(BeFalse())
			g.Expect(row.VerifiedReason).To(Equal(sandboxz.TokenRefused))
			cur := &garrav1alpha1.GarraServer{}
			g.Expect(k.c.Get(ctx, client.ObjectKeyFromObject(gs), cur)).To(Succeed())
			c := meta.FindStatusCondition(cur.Status.Conditions, garrav1alpha1.ConditionVerified)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(ContainSubstring(orchName + " (" + sandboxz.TokenRefused + ")"))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(50 * time.Millisecond).Should(Succeed())
		times.record("operator started → status Verified=False TokenRefused", time.Since(start))

		// ...and, having put the Deployment back, shows it verified again.
		Eventually(func(g Gomega) {
			g.Expect(verifiedRow(ctx, gs, orchName)).To(HaveField("Verified", BeTrue()))
			cur := &garrav1alpha1.GarraServer{}
			g.Expect(k.c.Get(ctx, client.ObjectKeyFromObject(gs), cur)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(cur.Status.Conditions, garrav1alpha1.ConditionVerified)).To(BeTrue())
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		times.record("status TokenRefused → Verified again (operator repaired the sandbox)", time.Since(start))
	}, NodeTimeout(10*time.Minute))
})

// verifiedRow is orchestrator o's row of gs's status (empty if none).
func verifiedRow(ctx context.Context, gs *garrav1alpha1.GarraServer, o string) garrav1alpha1.OrchestratorStatus {
	GinkgoHelper()
	cur := &garrav1alpha1.GarraServer{}
	Expect(k.c.Get(ctx, client.ObjectKeyFromObject(gs), cur)).To(Succeed())
	for _, row := range cur.Status.Orchestrators {
		if row.Name == o {
			return row
		}
	}
	return garrav1alpha1.OrchestratorStatus{}
}

// managerDeployment is the operator's Deployment, the one Deployment of
// its namespace.
func (k *cluster) managerDeployment(ctx context.Context) (client.ObjectKey, error) {
	var list appsv1.DeploymentList
	if err := k.c.List(ctx, &list, client.InNamespace(k.p.OperatorNamespace)); err != nil {
		return client.ObjectKey{}, err
	}
	if len(list.Items) != 1 {
		return client.ObjectKey{}, fmt.Errorf("%d Deployments in %s, want the manager's only", len(list.Items), k.p.OperatorNamespace)
	}
	return client.ObjectKeyFromObject(&list.Items[0]), nil
}

// setReplicas sets key's replicas and does not wait.
func (k *cluster) setReplicas(ctx context.Context, key client.ObjectKey, replicas int32) error {
	d := &appsv1.Deployment{}
	if err := k.c.Get(ctx, key, d); err != nil {
		return err
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = &replicas
	if err := k.c.Patch(ctx, d, patch); err != nil {
		return fmt.Errorf("scale %s to %d: %w", key, replicas, err)
	}
	return nil
}

// scaleDeployment sets key's replicas and waits until that many pods are
// available and no more exist.
func (k *cluster) scaleDeployment(ctx context.Context, key client.ObjectKey, replicas int32) error {
	if err := k.setReplicas(ctx, key, replicas); err != nil {
		return err
	}
	d := &appsv1.Deployment{}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	for {
		if err := k.c.Get(ctx, key, d); err != nil {
			return err
		}
		s := d.Status
		if s.ObservedGeneration >= d.Generation && s.Replicas == replicas && s.AvailableReplicas == replicas {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %d replicas, %d available; want %d: %w", key, s.Replicas, s.AvailableReplicas, replicas, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}
