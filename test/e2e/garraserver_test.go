//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/controllers"
	"github.com/garraia/garra/test/fakes/llmdouble"
	"github.com/garraia/garra/test/mcphttp"
)

// orch is one orchestrator of a fixture GarraServer.
type orch struct {
	name   string
	tools  []garrav1alpha1.Tool
	retain bool
}

// newGarraServer is a GarraServer whose model is the in-cluster double
// (OpenAI wire protocol) and whose claims use the suite's storage.
func newGarraServer(p params, name string, orchs ...orch) *garrav1alpha1.GarraServer {
	size := resource.MustParse("1Gi")
	gs := &garrav1alpha1.GarraServer{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.Namespace},
		Spec: garrav1alpha1.GarraServerSpec{
			LLM: garrav1alpha1.LLMSpec{
				Provider:        garrav1alpha1.ProviderOpenAI,
				Model:           "e2e-model",
				BaseURL:         fmt.Sprintf("http://%s.%s.svc:8080/v1", doubleName, p.Namespace),
				APIKeySecretRef: &garrav1alpha1.SecretKeySelector{Name: "llm-keys", Key: "openai"},
			},
			Gateway: garrav1alpha1.GatewaySpec{
				AllowAsk:             true,
				AllowAgent:           true,
				AgentBudgetPerMinute: 20,
				AgentMaxSeconds:      120,
				RateLimitPerMinute:   1000,
				Storage:              garrav1alpha1.StorageSpec{Size: size, StorageClassName: p.claimClass()},
			},
		},
	}
	for _, o := range orchs {
		gs.Spec.Orchestrators = append(gs.Spec.Orchestrators, garrav1alpha1.OrchestratorSpec{
			Name: o.name,
			OrchestratorSettings: garrav1alpha1.OrchestratorSettings{
				Tools: o.tools,
				Workspace: garrav1alpha1.WorkspaceSpec{
					StorageSpec: garrav1alpha1.StorageSpec{Size: size, StorageClassName: p.claimClass()},
					Retain:      o.retain,
				},
			},
		})
	}
	return gs
}

// claimsOf are the claims the operator will make for gs.
func claimsOf(gs *garrav1alpha1.GarraServer) []string {
	out := []string{gs.Name + "-gateway-data"}
	for _, o := range gs.Spec.Orchestrators {
		out = append(out, gs.Name+"-ws-"+o.Name)
	}
	return out
}

// applyReady creates gs on the suite's volumes and waits until it is
// Ready; it returns how long that took.
func applyReady(ctx context.Context, gs *garrav1alpha1.GarraServer) time.Duration {
	GinkgoHelper()
	Expect(k.provideVolumes(ctx, gs.Namespace, claimsOf(gs)...)).To(Succeed())
	start := time.Now()
	Expect(k.c.Create(ctx, gs)).To(Succeed())
	waitReady(ctx, gs, 4*time.Minute)
	return time.Since(start)
}

// gatewayOf is a client of gs's gateway Service whose calls may take up
// to three minutes (an agent run).
func gatewayOf(gs *garrav1alpha1.GarraServer) *gatewayClient {
	hc := dialer.httpClient()
	hc.Timeout = 3 * time.Minute
	return newGatewayClient(serviceURL(gs.Namespace, gs.Name+"-gateway", controllers.GatewayPort), hc)
}

// waitReady waits until gs has Ready=True for its current generation.
func waitReady(ctx context.Context, gs *garrav1alpha1.GarraServer, timeout time.Duration) {
	GinkgoHelper()
	Expect(k.waitReady(ctx, client.ObjectKeyFromObject(gs), timeout)).To(Succeed())
}

// sh runs script with bash in pod of ns and returns its standard output;
// a failed exec fails the spec.
func (k *cluster) sh(ctx context.Context, ns string, pod *corev1.Pod, script string) string {
	GinkgoHelper()
	out, errOut, err := k.exec(ctx, ns, pod.Name, "bash", "-c", script)
	Expect(err).NotTo(HaveOccurred(), "exec in %s: %s", pod.Name, errOut)
	return out
}

// waitVerified waits until gs's gateway has verified every sandbox, as
// the operator reports it.
func waitVerified(ctx context.Context, gs *garrav1alpha1.GarraServer) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		cur := &garrav1alpha1.GarraServer{}
		g.Expect(k.c.Get(ctx, client.ObjectKeyFromObject(gs), cur)).To(Succeed())
		c := meta.FindStatusCondition(cur.Status.Conditions, garrav1alpha1.ConditionVerified)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), c.Message)
		for _, o := range cur.Status.Orchestrators {
			g.Expect(o.Verified).To(BeTrue(), o.Name)
		}
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
}

func podLabels(gs *garrav1alpha1.GarraServer, component, o string) map[string]string {
	l := map[string]string{controllers.LabelInstance: gs.Name, controllers.LabelComponent: component}
	if o != "" {
		l[controllers.LabelOrchestrator] = o
	}
	return l
}

const planText = "ALPHA-PLAN-e2e-91c3: ship the operator"

// liveBound is how soon a policy change (an orchestrator onboarded, a token
// rotated or retired) must reach the running gateway, which watches its
// ConfigMap and tokens Secret through the API server. The target is 1 s at
// p95 (make bench-e2e prints it); the bound leaves room for a loaded node.
// Through the kubelet's refresh of the mounted files it was 65–90 s.
const liveBound = 5 * time.Second

// livePoll is how often a live-change assertion looks, fine enough to time
// a change under a second.
const livePoll = 50 * time.Millisecond

var _ = Describe("A GarraServer with two orchestrators", Ordered, func() {
	var (
		gs                          *garrav1alpha1.GarraServer
		gw                          *gatewayClient
		ownerKey, alphaKey, betaKey string
	)
	ns := func() string { return k.p.Namespace }

	alphaPod := func(ctx context.Context) *corev1.Pod {
		GinkgoHelper()
		p, err := k.runningPod(ctx, ns(), podLabels(gs, controllers.ComponentSandbox, "alpha"))
		Expect(err).NotTo(HaveOccurred())
		return p
	}
	sh := func(ctx context.Context, pod *corev1.Pod, script string) string {
		GinkgoHelper()
		return k.sh(ctx, ns(), pod, script)
	}

	BeforeAll(func(ctx SpecContext) {
		gs = newGarraServer(k.p, "team-e2e",
			orch{name: "alpha", tools: []garrav1alpha1.Tool{garrav1alpha1.ToolStatus, garrav1alpha1.ToolAgent}},
			orch{name: "beta", tools: []garrav1alpha1.Tool{garrav1alpha1.ToolStatus, garrav1alpha1.ToolListChats, garrav1alpha1.ToolAgent}, retain: true},
		)
		Expect(k.provideVolumes(ctx, ns(), claimsOf(gs)...)).To(Succeed())

		start := time.Now()
		Expect(k.c.Create(ctx, gs)).To(Succeed())
		waitReady(ctx, gs, 4*time.Minute)
		times.record("GarraServer (2 orchestrators) applied → Ready", time.Since(start))

		var err error
		ownerKey, err = k.secretValue(ctx, ns(), gs.Name+"-gateway", controllers.KeyAPIKey)
		Expect(err).NotTo(HaveOccurred())
		alphaKey, err = k.secretValue(ctx, ns(), gs.Name+"-orch-alpha", controllers.KeyToken)
		Expect(err).NotTo(HaveOccurred())
		betaKey, err = k.secretValue(ctx, ns(), gs.Name+"-orch-beta", controllers.KeyToken)
		Expect(err).NotTo(HaveOccurred())
		hc := dialer.httpClient()
		hc.Timeout = 3 * time.Minute
		gw = newGatewayClient(serviceURL(ns(), gs.Name+"-gateway", controllers.GatewayPort), hc)
		// Ready means the pods are available; the Service's endpoints
		// reach the node's proxy a moment later.
		start = time.Now()
		Eventually(func() error {
			_, err := gw.toolNames(ctx, ownerKey)
			return err
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		times.record("gateway Service answering after Ready", time.Since(start))
	}, NodeTimeout(6*time.Minute))

	// timed records how long the spec body took.
	timed := func(name string, body func(ctx SpecContext)) func(ctx SpecContext) {
		return func(ctx SpecContext) {
			start := time.Now()
			body(ctx)
			times.record(name, time.Since(start))
		}
	}

	It("shows each caller the tools its policy allows and refuses a wrong token", timed("scenario: tools/list per caller, wrong token", func(ctx SpecContext) {
		for who, tc := range map[string]struct {
			token string
			want  []string
		}{
			// The owner has every tool but the agent, which needs an
			// orchestrator's sandbox to act in.
			"owner": {ownerKey, []string{"garra_ask", "garra_list_chats", "garra_pair_status", "garra_read_history", "garra_status"}},
			"alpha": {alphaKey, []string{"garra_agent", "garra_status"}},
			"beta":  {betaKey, []string{"garra_agent", "garra_list_chats", "garra_status"}},
		} {
			names, err := gw.toolNames(ctx, tc.token)
			Expect(err).NotTo(HaveOccurred(), who)
			Expect(names).To(Equal(tc.want), who)
		}
		code, body, err := gw.Post(ctx, alphaKey+"x", "tools/list", map[string]any{})
		Expect(err).NotTo(HaveOccurred())
		Expect(code).To(Equal(http.StatusUnauthorized), string(body))
		Expect(string(body)).NotTo(ContainSubstring(alphaKey))
	}), NodeTimeout(time.Minute))

	It("runs alpha's agent with its hands in alpha's own pod and workspace", timed("scenario: alpha's agent writes a file and runs bash in its pod", func(ctx SpecContext) {
		Expect(double.script(ctx,
			toolCall("file_write", map[string]string{"path": "notes/plan.md", "content": planText}),
			toolCall("bash", map[string]string{"command": "pwd; id -u; ls /workspace"}),
			llmdouble.ScriptStep{Text: "Plan written."},
		)).To(Succeed())

		env, raw, isErr, err := gw.Agent(ctx, alphaKey, "Write the plan to notes/plan.md and look around.")
		Expect(err).NotTo(HaveOccurred())
		Expect(isErr).To(BeFalse(), raw)
		Expect(env.OK).To(BeTrue(), raw)
		Expect(env.Schema).To(Equal("garra.agent.v1"))
		Expect(env.Answer).To(Equal("Plan written."))
		Expect(env.SessionID).To(HavePrefix("mcp-http-alpha-"))
		Expect(env.ToolCalls).To(HaveLen(2), raw)
		Expect(env.ToolCalls[0].Name).To(Equal("file_write"))
		Expect(env.ToolCalls[0].Success).To(BeTrue(), raw)
		Expect(env.ToolCalls[1].Name).To(Equal("bash"))
		Expect(env.ToolCalls[1].Success).To(BeTrue(), raw)

		// The bash output, as the model saw it: the workspace as cwd, a
		// non-root uid, the file just written.
		reqs, err := double.requests(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(reqs.Requests).To(HaveLen(3))
		for _, r := range reqs.Requests {
			Expect(r.APIKey).To(Equal(llmKey), "the gateway sends the key from the Secret")
			Expect(r.Model).To(Equal("e2e-model"))
		}
		last := reqs.Requests[2].RawBody
		Expect(last).To(ContainSubstring(`/workspace\n65532\nnotes`), "bash output pwd; id -u; ls")

		// The file is on alpha's volume, seen from alpha's pod, not beta's.
		Expect(sh(ctx, alphaPod(ctx), "cat /workspace/notes/plan.md")).To(Equal(planText))
		betaPod, err := k.runningPod(ctx, ns(), podLabels(gs, controllers.ComponentSandbox, "beta"))
		Expect(err).NotTo(HaveOccurred())
		Expect(sh(ctx, betaPod, "ls -A /workspace; test ! -e /workspace/notes/plan.md && echo absent")).To(Equal("absent\n"))
		gwPod, err := k.runningPod(ctx, ns(), podLabels(gs, controllers.ComponentGateway, ""))
		Expect(err).NotTo(HaveOccurred())
		// The gateway image has no shell; its pod is checked through the
		// API only: it mounts no workspace claim.
		for _, v := range gwPod.Spec.Volumes {
			if v.PersistentVolumeClaim != nil {
				Expect(v.PersistentVolumeClaim.ClaimName).To(Equal(gs.Name + "-gateway-data"))
			}
		}
	}), NodeTimeout(3*time.Minute))

	It("keeps beta out of alpha's file", timed("scenario: beta cannot read alpha's file", func(ctx SpecContext) {
		Expect(double.script(ctx,
			toolCall("file_read", map[string]string{"path": "notes/plan.md"}),
			toolCall("file_read", map[string]string{"path": "/workspace/notes/plan.md"}),
			toolCall("bash", map[string]string{"command": "cat /workspace/notes/plan.md"}),
			llmdouble.ScriptStep{Text: "No plan here."},
		)).To(Succeed())
		env, raw, isErr, err := gw.Agent(ctx, betaKey, "Read notes/plan.md.")
		Expect(err).NotTo(HaveOccurred())
		Expect(isErr).To(BeFalse(), raw)
		Expect(env.SessionID).To(HavePrefix("mcp-http-beta-"))
		Expect(env.ToolCalls).To(HaveLen(3), raw)
		for _, c := range env.ToolCalls {
			Expect(c.Success).To(BeFalse(), "beta's %s succeeded: %s", c.Name, raw)
		}
		Expect(raw).NotTo(ContainSubstring("ALPHA-PLAN"))
		reqs, err := double.requests(ctx)
		Expect(err).NotTo(HaveOccurred())
		for _, r := range reqs.Requests {
			Expect(r.RawBody).NotTo(ContainSubstring("ALPHA-PLAN"))
		}
	}), NodeTimeout(3*time.Minute))

	It("gives alpha's sandbox pod no LLM key and no service-account token", timed("scenario: sandbox pod holds no key, no token", func(ctx SpecContext) {
		pod := alphaPod(ctx)
		// Through the API: no automounted token, no Secret-backed
		// variable, and one secret file: its own sandbox token lines, from
		// a Secret of its own, never the gateway's tokens Secret.
		Expect(pod.Spec.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
		for _, v := range pod.Spec.Volumes {
			Expect(v.Secret).To(BeNil(), "volume %s", v.Name)
			if v.Projected == nil {
				continue
			}
			Expect(v.Projected.Sources).To(HaveLen(1), "volume %s", v.Name)
			src := v.Projected.Sources[0].Secret
			Expect(src).NotTo(BeNil(), "volume %s", v.Name)
			Expect(src.Name).To(Equal(gs.Name + "-sandbox-alpha"))
			Expect(src.Items).To(HaveLen(1))
			Expect(src.Items[0].Key).To(Equal(controllers.KeySandboxToken))
		}
		for _, c := range pod.Spec.Containers {
			for _, e := range c.Env {
				Expect(e.ValueFrom).To(BeNil(), "variable %s", e.Name)
			}
		}
		// From inside: the environment of the server and of a shell, and
		// every file a mount could have put there.
		out := sh(ctx, pod, `env; tr '\0' '\n' </proc/1/environ; echo; `+
			`test -e /var/run/secrets/kubernetes.io/serviceaccount && echo SA-TOKEN-DIR-PRESENT; `+
			`awk '{print $2}' /proc/mounts`)
		Expect(out).NotTo(ContainSubstring("SA-TOKEN-DIR-PRESENT"))
		Expect(out).NotTo(ContainSubstring(llmKey))
		Expect(out).NotTo(ContainSubstring(controllers.EnvLLMAPIKey))
		Expect(out).NotTo(ContainSubstring("serviceaccount"))
		Expect(sh(ctx, pod, `ls `+controllers.SecretsDir)).To(Equal(controllers.KeySandboxToken+"\n"), "the sandbox token is the pod's one secret")
		// No file a mount or the image could hold carries the key.
		found := sh(ctx, pod, fmt.Sprintf(`grep -rlF -e %q /workspace /tmp /etc /var/run /run /home /proc/1/environ 2>/dev/null; echo done`, llmKey))
		Expect(found).To(Equal("done\n"), "files holding the LLM key")
		uid := sh(ctx, pod, "id -u")
		Expect(uid).To(Equal("65532\n"))
	}), NodeTimeout(time.Minute))

	It("brings a deleted gateway back and the same token works", timed("scenario: gateway Deployment deleted → back, same token", func(ctx SpecContext) {
		var d appsv1.Deployment
		key := client.ObjectKey{Namespace: ns(), Name: gs.Name + "-gateway"}
		Expect(k.c.Get(ctx, key, &d)).To(Succeed())
		oldUID := d.UID
		Expect(k.c.Delete(ctx, &d)).To(Succeed())
		Eventually(func(g Gomega) {
			var cur appsv1.Deployment
			g.Expect(k.c.Get(ctx, key, &cur)).To(Succeed())
			g.Expect(cur.UID).NotTo(Equal(oldUID))
			g.Expect(cur.Status.AvailableReplicas).To(BeNumerically(">=", 1))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		waitReady(ctx, gs, 2*time.Minute)

		Expect(double.script(ctx, llmdouble.ScriptStep{Text: "back again"})).To(Succeed())
		// The Service may route to the new pod a moment after it is ready.
		Eventually(func(g Gomega) {
			env, raw, isErr, err := gw.Agent(ctx, alphaKey, "Are you there?")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(isErr).To(BeFalse(), raw)
			g.Expect(env.Answer).To(Equal("back again"))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	}), NodeTimeout(5*time.Minute))

	// agentResult is one garra_agent call made in the background.
	type agentResult struct {
		env   mcphttp.AgentEnvelope
		raw   string
		isErr bool
		err   error
	}
	agentInBackground := func(ctx context.Context, token, msg string) <-chan agentResult {
		done := make(chan agentResult, 1)
		go func() {
			defer GinkgoRecover()
			env, raw, isErr, err := gw.Agent(ctx, token, msg)
			done <- agentResult{env, raw, isErr, err}
		}()
		return done
	}
	// modelReached waits until the double has seen n requests since it was
	// last scripted: the run is then in flight, waiting on the model.
	modelReached := func(ctx context.Context, n int) {
		GinkgoHelper()
		Eventually(func(g Gomega) {
			reqs, err := double.requests(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(reqs.Requests).To(HaveLen(n))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	}
	gatewayPod := func(ctx context.Context) *corev1.Pod {
		GinkgoHelper()
		p, err := k.runningPod(ctx, ns(), podLabels(gs, controllers.ComponentGateway, ""))
		Expect(err).NotTo(HaveOccurred())
		return p
	}
	restarts := func(p *corev1.Pod) int32 {
		var n int32
		for _, c := range p.Status.ContainerStatuses {
			n += c.RestartCount
		}
		return n
	}

	It("onboards an orchestrator and changes the budget while another's run is in flight, in the same gateway pod", timed("scenario: gamma onboarded live during alpha's run", func(ctx SpecContext) {
		before := gatewayPod(ctx)
		var d appsv1.Deployment
		Expect(k.c.Get(ctx, client.ObjectKey{Namespace: ns(), Name: gs.Name + "-gateway"}, &d)).To(Succeed())
		genBefore := d.Generation

		// Alpha's run waits on the model for longer than the new policy
		// takes to reach the running pod, with room.
		Expect(double.script(ctx, llmdouble.ScriptStep{Text: "slow but done", DelayMS: 30_000})).To(Succeed())
		alphaRun := agentInBackground(ctx, alphaKey, "Take your time.")
		modelReached(ctx, 1)

		withGamma := newGarraServer(k.p, gs.Name, orch{name: "gamma", tools: []garrav1alpha1.Tool{garrav1alpha1.ToolStatus}})
		Expect(k.provideVolumes(ctx, ns(), claimsOf(withGamma)[1:]...)).To(Succeed())
		cur := &garrav1alpha1.GarraServer{}
		Expect(k.c.Get(ctx, client.ObjectKeyFromObject(gs), cur)).To(Succeed())
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec.Orchestrators = append(cur.Spec.Orchestrators, withGamma.Spec.Orchestrators[0])
		cur.Spec.Gateway.AgentBudgetPerMinute = 25
		start := time.Now()
		Expect(k.c.Patch(ctx, cur, patch)).To(Succeed())

		// The reconcile, the gateway's watch and its reload, all within
		// liveBound of the patch: no file of the pod changes on the way.
		var gammaKey string
		Eventually(func(g Gomega) {
			if gammaKey == "" {
				v, err := k.secretValue(ctx, ns(), gs.Name+"-orch-gamma", controllers.KeyToken)
				g.Expect(err).NotTo(HaveOccurred())
				gammaKey = v
			}
			names, err := gw.toolNames(ctx, gammaKey)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(names).To(Equal([]string{"garra_status"}))
		}).WithContext(ctx).WithTimeout(liveBound).WithPolling(livePoll).Should(Succeed())
		times.record("gamma: spec patched → its first successful call (reconcile + watch + reload)", time.Since(start))
		Expect(alphaRun).NotTo(Receive(), "alpha's run was still in flight when gamma was onboarded")

		var r agentResult
		Eventually(alphaRun).WithTimeout(2 * time.Minute).Should(Receive(&r))
		Expect(r.err).NotTo(HaveOccurred())
		Expect(r.isErr).To(BeFalse(), r.raw)
		Expect(r.env.Answer).To(Equal("slow but done"), r.raw)

		after := gatewayPod(ctx)
		Expect(after.UID).To(Equal(before.UID), "onboarding is policy: the same gateway pod serves it")
		Expect(restarts(after)).To(Equal(restarts(before)))
		Expect(k.c.Get(ctx, client.ObjectKey{Namespace: ns(), Name: gs.Name + "-gateway"}, &d)).To(Succeed())
		Expect(d.Generation).To(Equal(genBefore))
		waitReady(ctx, gs, 3*time.Minute)
	}), NodeTimeout(8*time.Minute))

	It("rotates gamma's token with an overlap: the old one works during the grace period and is refused after", timed("scenario: token rotation with an overlap", func(ctx SpecContext) {
		oldKey, err := k.secretValue(ctx, ns(), gs.Name+"-orch-gamma", controllers.KeyToken)
		Expect(err).NotTo(HaveOccurred())
		cur := &garrav1alpha1.GarraServer{}
		Expect(k.c.Get(ctx, client.ObjectKeyFromObject(gs), cur)).To(Succeed())
		patch := client.MergeFrom(cur.DeepCopy())
		// Longer than the kubelet takes to deliver the new token to the
		// sandbox's file: the gateway sends the sandbox the old line until
		// the grace ends.
		cur.Spec.Gateway.TokenRotationGracePeriod = &metav1.Duration{Duration: 2 * time.Minute}
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations[garrav1alpha1.AnnotationRotateToken] = "gamma"
		start := time.Now()
		Expect(k.c.Patch(ctx, cur, patch)).To(Succeed())

		var newKey string
		Eventually(func(g Gomega) {
			v, err := k.secretValue(ctx, ns(), gs.Name+"-orch-gamma", controllers.KeyToken)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(v).NotTo(Equal(oldKey))
			newKey = v
			_, err = gw.toolNames(ctx, newKey)
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).WithTimeout(liveBound).WithPolling(livePoll).Should(Succeed())
		times.record("rotation: annotated → new token accepted", time.Since(start))
		_, err = gw.toolNames(ctx, oldKey)
		Expect(err).NotTo(HaveOccurred(), "within the grace period the old token still works")

		// The grace's end as the tokens Secret records it; the old token
		// must be refused within liveBound of it.
		var tokens corev1.Secret
		Expect(k.c.Get(ctx, client.ObjectKey{Namespace: ns(), Name: gs.Name + "-gateway-tokens"}, &tokens)).To(Succeed())
		until, err := time.Parse(time.RFC3339, tokens.Annotations[controllers.AnnotationRotationPrefix+"gamma"])
		Expect(err).NotTo(HaveOccurred(), "the rotation's expiry on the tokens Secret")
		// Polled from just before the grace ends: polling all of it at
		// livePoll would spend the per-address rate limit (120 a minute)
		// and time the 429s instead of the refusal.
		if wait := time.Until(until) - time.Second; wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				Fail("interrupted while waiting for the grace period to end")
			}
		}
		Eventually(func(g Gomega) {
			code, _, err := gw.Post(ctx, oldKey, "tools/list", map[string]any{})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(code).To(Equal(http.StatusUnauthorized))
		}).WithContext(ctx).WithTimeout(time.Until(until) + liveBound).WithPolling(livePoll).Should(Succeed())
		times.record("rotation: grace ended → old token refused", time.Since(until))
		_, err = gw.toolNames(ctx, newKey)
		Expect(err).NotTo(HaveOccurred())
		Expect(k.c.Get(ctx, client.ObjectKeyFromObject(gs), cur)).To(Succeed())
		Expect(cur.Annotations).NotTo(HaveKey(garrav1alpha1.AnnotationRotateToken), "the request was handled")
	}), NodeTimeout(9*time.Minute))

	It("drains a deleted gateway pod: the run in flight completes", timed("scenario: gateway pod deleted during a run → drained", func(ctx SpecContext) {
		old := gatewayPod(ctx)
		Expect(double.script(ctx, llmdouble.ScriptStep{Text: "finished while draining", DelayMS: 4000})).To(Succeed())
		run := agentInBackground(ctx, alphaKey, "Finish even if the pod goes.")
		modelReached(ctx, 1)
		Expect(k.c.Delete(ctx, old)).To(Succeed()) // the pod's own grace period: drainSeconds + 10

		var r agentResult
		Eventually(run).WithTimeout(time.Minute).Should(Receive(&r))
		Expect(r.err).NotTo(HaveOccurred())
		Expect(r.isErr).To(BeFalse(), r.raw)
		Expect(r.env.Answer).To(Equal("finished while draining"), r.raw)

		Eventually(func(g Gomega) {
			p, err := k.runningPod(ctx, ns(), podLabels(gs, controllers.ComponentGateway, ""))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(p.UID).NotTo(Equal(old.UID))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		waitReady(ctx, gs, 3*time.Minute)
		Eventually(func() error {
			_, err := gw.toolNames(ctx, alphaKey)
			return err
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	}), NodeTimeout(6*time.Minute))

	It("applies a budget change live, in the same gateway pod, and enforces the new budget", timed("scenario: budget change applied live, enforced", func(ctx SpecContext) {
		key := client.ObjectKey{Namespace: ns(), Name: gs.Name + "-gateway"}
		var d appsv1.Deployment
		Expect(k.c.Get(ctx, key, &d)).To(Succeed())
		genBefore := d.Generation
		gwPod, err := k.runningPod(ctx, ns(), podLabels(gs, controllers.ComponentGateway, ""))
		Expect(err).NotTo(HaveOccurred())
		sandboxBefore := alphaPod(ctx).UID

		cur := &garrav1alpha1.GarraServer{}
		Expect(k.c.Get(ctx, client.ObjectKeyFromObject(gs), cur)).To(Succeed())
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec.Gateway.AgentBudgetPerMinute = 1
		Expect(k.c.Patch(ctx, cur, patch)).To(Succeed())

		// The gateway's watch delivers the ConfigMap; the gateway reloads
		// it and says so on /readyz, which ConfigApplied reports.
		Eventually(func(g Gomega) {
			var cm corev1.ConfigMap
			g.Expect(k.c.Get(ctx, key, &cm)).To(Succeed())
			g.Expect(cm.Data[controllers.ConfigKey]).To(ContainSubstring("agent_budget_per_minute: 1\n"))
			cur := &garrav1alpha1.GarraServer{}
			g.Expect(k.c.Get(ctx, client.ObjectKeyFromObject(gs), cur)).To(Succeed())
			g.Expect(cur.Status.ConfigHash).To(Equal(controllers.ConfigHash(cm.Data[controllers.ConfigKey])))
			c := meta.FindStatusCondition(cur.Status.Conditions, garrav1alpha1.ConditionConfigApplied)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(garrav1alpha1.ReasonApplied), c.Message)
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(k.c.Get(ctx, key, &d)).To(Succeed())
		Expect(d.Generation).To(Equal(genBefore), "a budget is policy: the gateway Deployment is not rolled")
		now, err := k.runningPod(ctx, ns(), podLabels(gs, controllers.ComponentGateway, ""))
		Expect(err).NotTo(HaveOccurred())
		Expect(now.UID).To(Equal(gwPod.UID), "the same gateway pod runs the new budget")
		Expect(alphaPod(ctx).UID).To(Equal(sandboxBefore), "the gateway's budget is no input of a sandbox: its pod keeps running")

		// One call fits the new budget; the next in the same minute does not,
		// and never reaches the model.
		Expect(double.script(ctx, llmdouble.ScriptStep{Text: "one"})).To(Succeed())
		Eventually(func(g Gomega) {
			env, raw, _, err := gw.Agent(ctx, alphaKey, "First.")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(env.Answer).To(Equal("one"), raw)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		env, raw, isErr, err := gw.Agent(ctx, betaKey, "Second.")
		Expect(err).NotTo(HaveOccurred())
		Expect(isErr).To(BeTrue(), raw)
		Expect(env.Error).NotTo(BeNil(), raw)
		Expect(env.Error.Kind).To(Equal("over_budget"), raw)
		reqs, err := double.requests(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(reqs.Requests).To(HaveLen(1))
	}), NodeTimeout(5*time.Minute))

	It("removes beta's objects when beta leaves the spec and keeps its retained claim", timed("scenario: beta removed → its objects deleted, claim retained", func(ctx SpecContext) {
		cur := &garrav1alpha1.GarraServer{}
		Expect(k.c.Get(ctx, client.ObjectKeyFromObject(gs), cur)).To(Succeed())
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec.Orchestrators = cur.Spec.Orchestrators[:1]
		Expect(cur.Spec.Orchestrators[0].Name).To(Equal("alpha"))
		alphaBefore := alphaPod(ctx).UID
		Expect(k.c.Patch(ctx, cur, patch)).To(Succeed())

		gone := map[string]client.Object{
			gs.Name + "-sandbox-beta": &appsv1.Deployment{},
			gs.Name + "-orch-beta":    &corev1.Secret{},
		}
		Eventually(func(g Gomega) {
			for name, o := range gone {
				err := k.c.Get(ctx, client.ObjectKey{Namespace: ns(), Name: name}, o)
				g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "%T %s: %v", o, name, err)
			}
			err := k.c.Get(ctx, client.ObjectKey{Namespace: ns(), Name: gs.Name + "-sandbox-beta"}, &corev1.Service{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Service: %v", err)
			err = k.c.Get(ctx, client.ObjectKey{Namespace: ns(), Name: gs.Name + "-sandbox-beta"}, &corev1.ServiceAccount{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ServiceAccount: %v", err)
			var pods corev1.PodList
			g.Expect(k.c.List(ctx, &pods, client.InNamespace(ns()), client.MatchingLabels(podLabels(gs, controllers.ComponentSandbox, "beta")))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())

		// retain: true — the claim stays, no longer owned, so deleting the
		// GarraServer will not take it either.
		var pvc corev1.PersistentVolumeClaim
		Expect(k.c.Get(ctx, client.ObjectKey{Namespace: ns(), Name: gs.Name + "-ws-beta"}, &pvc)).To(Succeed())
		Expect(pvc.DeletionTimestamp).To(BeNil())
		Expect(metav1.GetControllerOf(&pvc)).To(BeNil())
		// alpha is untouched: the same pod, its file still there.
		Expect(alphaPod(ctx).UID).To(Equal(alphaBefore))
		Expect(sh(ctx, alphaPod(ctx), "cat /workspace/notes/plan.md")).To(Equal(planText))
		waitReady(ctx, gs, 2*time.Minute)
		Expect(strings.Join(func() []string {
			cur := &garrav1alpha1.GarraServer{}
			Expect(k.c.Get(ctx, client.ObjectKeyFromObject(gs), cur)).To(Succeed())
			var n []string
			for _, o := range cur.Status.Orchestrators {
				n = append(n, o.Name)
			}
			return n
		}(), ",")).To(Equal("alpha"))
	}), NodeTimeout(5*time.Minute))

	It("deletes alpha's claim when alpha, not retained, leaves the spec", timed("scenario: alpha removed → its claim deleted (retain: false)", func(ctx SpecContext) {
		cur := &garrav1alpha1.GarraServer{}
		Expect(k.c.Get(ctx, client.ObjectKeyFromObject(gs), cur)).To(Succeed())
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec.Orchestrators = nil
		Expect(k.c.Patch(ctx, cur, patch)).To(Succeed())

		Eventually(func(g Gomega) {
			err := k.c.Get(ctx, client.ObjectKey{Namespace: ns(), Name: gs.Name + "-ws-alpha"}, &corev1.PersistentVolumeClaim{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "claim: %v", err)
			var pods corev1.PodList
			g.Expect(k.c.List(ctx, &pods, client.InNamespace(ns()), client.MatchingLabels(podLabels(gs, controllers.ComponentSandbox, "alpha")))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		// beta's retained claim outlives both.
		Expect(k.c.Get(ctx, client.ObjectKey{Namespace: ns(), Name: gs.Name + "-ws-beta"}, &corev1.PersistentVolumeClaim{})).To(Succeed())
		waitReady(ctx, gs, 2*time.Minute)
	}), NodeTimeout(5*time.Minute))
})
