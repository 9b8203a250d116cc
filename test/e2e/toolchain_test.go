//go:build e2e

package e2e

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/controllers"
)

var _ = Describe("A sandbox in a team's own toolchain image", Ordered, func() {
	var (
		gs *garrav1alpha1.GarraServer
		gw *gatewayClient
	)
	ns := func() string { return k.p.Namespace }
	tools := []garrav1alpha1.Tool{garrav1alpha1.ToolStatus, garrav1alpha1.ToolAgent}

	BeforeAll(func(ctx SpecContext) {
		// builder's image has make and python3 and no garra; needs-go asks
		// for a program the image lacks.
		gs = newGarraServer(k.p, "tool-e2e", orch{name: "builder", tools: tools}, orch{name: "needs-go", tools: tools})
		for i, req := range [][]string{{"make", "python3"}, {"go"}} {
			gs.Spec.Orchestrators[i].Sandbox.Image = k.p.ToolchainImage
			gs.Spec.Orchestrators[i].Sandbox.RequiredTools = req
		}
		times.record("GarraServer with two own-image sandboxes applied → Ready", applyReady(ctx, gs))
		gw = gatewayOf(gs)
	}, NodeTimeout(6*time.Minute))

	AfterAll(func(ctx SpecContext) {
		if gs != nil {
			Expect(k.deleteAndWait(ctx, gs)).To(Succeed())
		}
	}, NodeTimeout(3*time.Minute))

	It("reports each sandbox's toolchain, and a missing required tool as not Verified naming it", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			cur := &garrav1alpha1.GarraServer{}
			g.Expect(k.c.Get(ctx, client.ObjectKeyFromObject(gs), cur)).To(Succeed())
			rows := map[string]garrav1alpha1.OrchestratorStatus{}
			for _, o := range cur.Status.Orchestrators {
				rows[o.Name] = o
			}
			g.Expect(rows["builder"].Verified).To(BeTrue(), rows["builder"].VerifiedMessage)
			g.Expect(rows["builder"].Toolchain).To(ContainElements("bash", "make", "python3"))
			g.Expect(rows["builder"].Toolchain).NotTo(ContainElement("garra"))
			g.Expect(rows["needs-go"].Verified).To(BeFalse())
			g.Expect(rows["needs-go"].VerifiedReason).To(Equal("MissingTools"))
			g.Expect(rows["needs-go"].VerifiedMessage).To(ContainSubstring("go"))
			c := meta.FindStatusCondition(cur.Status.Conditions, garrav1alpha1.ConditionVerified)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Message).To(ContainSubstring("needs-go (MissingTools)"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	}, NodeTimeout(3*time.Minute))

	It("runs the agent's bash with that toolchain and serves it as the orchestrator's toolchain resource", func(ctx SpecContext) {
		key, err := k.secretValue(ctx, ns(), gs.Name+"-orch-builder", controllers.KeyToken)
		Expect(err).NotTo(HaveOccurred())
		reqs := agentBash(ctx, gw, key, "Check the toolchain.", "make --version | head -n1; python3 --version; command -v garra >/dev/null || echo no-garra-on-path")
		Expect(reqs.Requests[1].RawBody).To(And(ContainSubstring("GNU Make"), ContainSubstring("Python 3."), ContainSubstring("no-garra-on-path")))
		// The model was told what it has.
		Expect(reqs.Requests[0].System).To(And(ContainSubstring("make"), ContainSubstring("python3")))

		res, err := gw.Result(ctx, key, "resources/read", map[string]any{"uri": "garra://sandbox/toolchain"})
		Expect(err).NotTo(HaveOccurred())
		var read struct {
			Contents []struct {
				Text string `json:"text"`
			} `json:"contents"`
		}
		Expect(json.Unmarshal(res, &read)).To(Succeed())
		Expect(read.Contents).To(HaveLen(1))
		Expect(read.Contents[0].Text).To(And(ContainSubstring(`"make"`), ContainSubstring(`"python3"`)))
	}, NodeTimeout(3*time.Minute))
})
