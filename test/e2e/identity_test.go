//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/controllers"
)

// callerPod is a pod of ServiceAccount sa with a projected token for
// audience at /var/run/garra/token and no Secret at all; it runs the
// sandbox image (bash) idle, for the test to exec into.
func callerPod(ns, name, sa, audience, image string) *corev1.Pod {
	no, yes := false, true
	uid := int64(65532)
	exp := int64(3600)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{"app.kubernetes.io/name": "e2e-caller", "e2e-caller": name}},
		Spec: corev1.PodSpec{
			ServiceAccountName:           sa,
			AutomountServiceAccountToken: &no,
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid,
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "caller", Image: image, ImagePullPolicy: corev1.PullIfNotPresent,
				Command:      []string{"sleep", "infinity"},
				VolumeMounts: []corev1.VolumeMount{{Name: "garra-token", MountPath: "/var/run/garra", ReadOnly: true}},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
			Volumes: []corev1.Volume{{Name: "garra-token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
					Path: "token", Audience: audience, ExpirationSeconds: &exp}}},
			}}}},
		},
	}
}

// toolsListFromPod posts tools/list from inside pod with its projected
// token, over bash's /dev/tcp (the image has no HTTP client), and returns
// the HTTP status line and the response.
const toolsListFromPod = `set -e
tok=$(cat /var/run/garra/token)
body='{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}'
exec 3<>/dev/tcp/%[1]s/3888
printf 'POST /mcp HTTP/1.1\r\nHost: %[1]s:3888\r\nAuthorization: Bearer %%s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %%d\r\nConnection: close\r\n\r\n%%s' "$tok" "${#body}" "$body" >&3
cat <&3
`

var toolName = regexp.MustCompile(`"name":"(garra_[a-z_]+)"`)

var _ = Describe("Orchestrators that authenticate with their ServiceAccount", Ordered, func() {
	var gs *garrav1alpha1.GarraServer
	ns := func() string { return k.p.Namespace }
	host := func() string { return gs.Name + "-gateway." + ns() + ".svc" }

	call := func(ctx context.Context, pod string) (status int, tools []string, body string) {
		GinkgoHelper()
		out, errOut, err := k.exec(ctx, ns(), pod, "bash", "-c", fmt.Sprintf(toolsListFromPod, host()))
		Expect(err).NotTo(HaveOccurred(), "exec in %s: %s", pod, errOut)
		_, err = fmt.Sscanf(out, "HTTP/1.1 %d", &status)
		Expect(err).NotTo(HaveOccurred(), "response %q", out)
		for _, m := range toolName.FindAllStringSubmatch(out, -1) {
			tools = append(tools, m[1])
		}
		slices.Sort(tools)
		return status, slices.Compact(tools), out
	}

	BeforeAll(func(ctx SpecContext) {
		for _, sa := range []string{"robot-sa", "stranger-sa"} {
			Expect(k.c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns(), Name: sa}})).To(Succeed())
		}
		gs = newGarraServer(k.p, "team-id",
			orch{name: "robot", tools: []garrav1alpha1.Tool{garrav1alpha1.ToolStatus, garrav1alpha1.ToolListChats}},
			orch{name: "keyed", tools: []garrav1alpha1.Tool{garrav1alpha1.ToolStatus}},
		)
		gs.Spec.Orchestrators[0].Auth = &garrav1alpha1.OrchestratorAuth{ServiceAccount: &garrav1alpha1.ServiceAccountAuth{Name: "robot-sa"}}
		Expect(k.provideVolumes(ctx, ns(), claimsOf(gs)...)).To(Succeed())
		start := time.Now()
		Expect(k.c.Create(ctx, gs)).To(Succeed())
		waitReady(ctx, gs, 4*time.Minute)
		times.record("GarraServer with a serviceAccount orchestrator applied → Ready", time.Since(start))

		aud := controllers.Endpoint(gs)
		for pod, sa := range map[string]string{"robot-pod": "robot-sa", "stranger-pod": "stranger-sa"} {
			Expect(k.c.Create(ctx, callerPod(ns(), pod, sa, aud, k.p.SandboxImage))).To(Succeed())
		}
		Eventually(func(g Gomega) {
			for _, name := range []string{"robot-pod", "stranger-pod"} {
				p := &corev1.Pod{}
				g.Expect(k.c.Get(ctx, client.ObjectKey{Namespace: ns(), Name: name}, p)).To(Succeed())
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), name)
			}
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		start = time.Now()
		Eventually(func() int {
			s, _, _ := call(ctx, "robot-pod")
			return s
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal(200))
		times.record("robot pod's first admitted call after its pod ran", time.Since(start))
	}, NodeTimeout(8*time.Minute))

	It("admits the pod's projected token with no Secret and shows exactly its tools", func(ctx SpecContext) {
		var tokens corev1.Secret
		Expect(k.c.Get(ctx, client.ObjectKey{Namespace: ns(), Name: gs.Name + "-orch-robot"}, &tokens)).To(Succeed())
		Expect(tokens.Data).NotTo(HaveKey(controllers.KeyToken), "no bearer token is generated for a serviceAccount orchestrator")
		status, tools, body := call(ctx, "robot-pod")
		Expect(status).To(Equal(200), body)
		Expect(tools).To(Equal([]string{"garra_list_chats", "garra_status"}))
	})

	It("refuses another ServiceAccount's pod", func(ctx SpecContext) {
		status, tools, body := call(ctx, "stranger-pod")
		Expect(status).To(Equal(401), body)
		Expect(body).To(ContainSubstring(`"error":"identity_not_allowed"`))
		Expect(tools).To(BeEmpty())
	})

	It("refuses the pod's next call once its ServiceAccount is deleted, after the cache bound", func(ctx SpecContext) {
		status, _, _ := call(ctx, "robot-pod")
		Expect(status).To(Equal(200))
		start := time.Now()
		Expect(k.c.Delete(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns(), Name: "robot-sa"}})).To(Succeed())
		var body string
		Eventually(func() int {
			var s int
			s, _, body = call(ctx, "robot-pod")
			return s
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Equal(401))
		took := time.Since(start)
		Expect(body).To(ContainSubstring(`"error":"invalid_token"`))
		Expect(strings.Contains(body, "eyJ")).To(BeFalse(), "the refusal must not echo the token")
		times.record("ServiceAccount deleted → its pod's call refused", took)
		GinkgoWriter.Printf("ServiceAccount deleted → refused after %s (review cache bound 10s)\n", took.Round(100*time.Millisecond))
	})

	AfterAll(func(ctx SpecContext) {
		for _, name := range []string{"robot-pod", "stranger-pod"} {
			_ = k.c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns(), Name: name}})
		}
		if gs != nil {
			Expect(k.deleteAndWait(ctx, gs)).To(Succeed())
		}
	}, NodeTimeout(3*time.Minute))
})
