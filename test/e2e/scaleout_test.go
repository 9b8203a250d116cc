//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/controllers"
	"github.com/garraia/garra/test/fakes/llmdouble"
	"github.com/garraia/garra/test/mcphttp"
)

// postgresName is the Deployment and Service of the suite's PostgreSQL.
const postgresName = "garra-e2e-postgres"

// deployPostgres runs a throwaway PostgreSQL (the image of
// hack/postgres-rootfs.sh: a fresh server on an emptyDir, SCRAM over TCP)
// and returns the DSN that reaches it through its Service.
func (k *cluster) deployPostgres(ctx context.Context, ns string) (string, error) {
	raw := make([]byte, 16)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	password := hex.EncodeToString(raw)
	lbl := map[string]string{"app.kubernetes.io/name": postgresName}
	one := int32(1)
	no, yes := false, true
	uid := int64(65532)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: postgresName, Namespace: ns, Labels: lbl},
		StringData: map[string]string{"password": password},
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: postgresName, Namespace: ns, Labels: lbl},
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: lbl},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: &no,
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: &yes, RunAsUser: &uid, RunAsGroup: &uid, FSGroup: &uid,
						SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
					Containers: []corev1.Container{{
						Name:            "postgres",
						Image:           k.p.PostgresImage,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Env: []corev1.EnvVar{
							{Name: "POSTGRES_USER", Value: "garra"},
							{Name: "POSTGRES_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
								LocalObjectReference: corev1.LocalObjectReference{Name: postgresName}, Key: "password"}}},
						},
						Ports: []corev1.ContainerPort{{Name: "postgres", ContainerPort: 5432}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
							Command: []string{"pg_isready", "-h", "127.0.0.1", "-U", "garra", "-d", "postgres"}}}, PeriodSeconds: 1},
						VolumeMounts: []corev1.VolumeMount{
							{Name: "data", MountPath: "/var/lib/postgresql/data"},
							{Name: "tmp", MountPath: "/tmp"},
						},
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes,
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
					}},
					Volumes: []corev1.Volume{
						{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
					},
				},
			},
		},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: postgresName, Namespace: ns, Labels: lbl},
		Spec:       corev1.ServiceSpec{Selector: lbl, Ports: []corev1.ServicePort{{Name: "postgres", Port: 5432, TargetPort: intstr.FromString("postgres")}}},
	}
	for _, o := range []client.Object{secret, d, svc} {
		if err := k.c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("create %T %s: %w", o, o.GetName(), err)
		}
	}
	return fmt.Sprintf("postgres://garra:%s@%s.%s.svc:5432/postgres?sslmode=disable", password, postgresName, ns), nil
}

// podClient is a gateway client whose connections all go to one pod (its
// IP, or a port-forward to it), with the Service's name as Host.
func (k *cluster) podClient(gs *garrav1alpha1.GarraServer, pod *corev1.Pod) (*gatewayClient, func(), error) {
	target := net.JoinHostPort(pod.Status.PodIP, fmt.Sprint(controllers.GatewayPort))
	stop := func() {}
	if k.p.Access == accessPortForward {
		f, err := k.portForward(pod.Namespace, pod.Name, controllers.GatewayPort)
		if err != nil {
			return nil, nil, err
		}
		target, stop = f.local, func() { close(f.stop); <-f.done }
	}
	if err := inCluster(target); err != nil {
		return nil, nil, err
	}
	nd := net.Dialer{Timeout: connectTimeout}
	hc := &http.Client{Timeout: time.Minute, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return nd.DialContext(ctx, network, target)
		},
	}}
	return newGatewayClient(serviceURL(gs.Namespace, gs.Name+"-gateway", controllers.GatewayPort), hc), stop, nil
}

// gatewayPods are the running, not terminating gateway pods of gs.
func (k *cluster) gatewayPods(ctx context.Context, gs *garrav1alpha1.GarraServer) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := k.c.List(ctx, &pods, client.InNamespace(gs.Namespace), client.MatchingLabels(podLabels(gs, controllers.ComponentGateway, ""))); err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" && podReady(&p) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// fairQuota is each fairness tenant's garra_agent calls a minute.
const fairQuota = 3

// callOutcome is how one call of a stream ended: "" for success, else why.
type callOutcome struct {
	at  time.Time
	err string
}

var _ = Describe("A gateway with two replicas on PostgreSQL", Ordered, func() {
	var (
		gs        *garrav1alpha1.GarraServer
		gw        *gatewayClient
		ownerKey  string
		alphaKey  string
		floodKey  string
		steadyKey string
	)
	ns := func() string { return k.p.Namespace }

	BeforeAll(func(ctx SpecContext) {
		start := time.Now()
		dsn, err := k.deployPostgres(ctx, ns())
		Expect(err).NotTo(HaveOccurred())
		Expect(k.c.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "scale-store", Namespace: ns()},
			StringData: map[string]string{"dsn": dsn},
		})).To(Succeed())
		Eventually(func(g Gomega) {
			var d appsv1.Deployment
			g.Expect(k.c.Get(ctx, client.ObjectKey{Namespace: ns(), Name: postgresName}, &d)).To(Succeed())
			g.Expect(d.Status.ReadyReplicas).To(Equal(int32(1)))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		times.record("PostgreSQL pod (initdb on an emptyDir) Ready", time.Since(start))

		agentTools := []garrav1alpha1.Tool{garrav1alpha1.ToolStatus, garrav1alpha1.ToolAgent}
		gs = newGarraServer(k.p, "scale-e2e", orch{name: "alpha", tools: agentTools},
			orch{name: "flood", tools: agentTools}, orch{name: "steady", tools: agentTools})
		// The fairness spec's two tenants: each its own quota of agent runs
		// a minute, together well inside the bridge's agent budget.
		for i := range gs.Spec.Orchestrators[1:] {
			perMinute := int32(fairQuota)
			gs.Spec.Orchestrators[1+i].Quota = &garrav1alpha1.QuotaSpec{AgentPerMinute: &perMinute}
		}
		gs.Spec.Gateway.Replicas = 2
		gs.Spec.Gateway.Store = garrav1alpha1.GatewayStoreSpec{
			Driver:       garrav1alpha1.StorePostgres,
			DSNSecretRef: &garrav1alpha1.SecretKeySelector{Name: "scale-store", Key: "dsn"},
		}
		gs.Spec.Gateway.AskBudgetPerMinute = 6
		gs.Spec.Gateway.DrainSeconds = 10
		// No gateway data claim with postgres: only the workspace's.
		Expect(k.provideVolumes(ctx, ns(), gs.Name+"-ws-alpha", gs.Name+"-ws-flood", gs.Name+"-ws-steady")).To(Succeed())
		start = time.Now()
		Expect(k.c.Create(ctx, gs)).To(Succeed())
		waitReady(ctx, gs, 4*time.Minute)
		times.record("GarraServer (2 gateway replicas, postgres) applied → Ready", time.Since(start))

		ownerKey, err = k.secretValue(ctx, ns(), gs.Name+"-gateway", controllers.KeyAPIKey)
		Expect(err).NotTo(HaveOccurred())
		alphaKey, err = k.secretValue(ctx, ns(), gs.Name+"-orch-alpha", controllers.KeyToken)
		Expect(err).NotTo(HaveOccurred())
		floodKey, err = k.secretValue(ctx, ns(), gs.Name+"-orch-flood", controllers.KeyToken)
		Expect(err).NotTo(HaveOccurred())
		steadyKey, err = k.secretValue(ctx, ns(), gs.Name+"-orch-steady", controllers.KeyToken)
		Expect(err).NotTo(HaveOccurred())
		hc := dialer.httpClient()
		hc.Timeout = time.Minute
		gw = newGatewayClient(serviceURL(ns(), gs.Name+"-gateway", controllers.GatewayPort), hc)
		Eventually(func(g Gomega) {
			pods, err := k.gatewayPods(ctx, gs)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods).To(HaveLen(2))
			_, err = gw.toolNames(ctx, ownerKey)
			g.Expect(err).NotTo(HaveOccurred())
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
	}, NodeTimeout(8*time.Minute))

	AfterAll(func(ctx SpecContext) {
		if gs != nil {
			Expect(k.deleteAndWait(ctx, gs)).To(Succeed())
		}
	}, NodeTimeout(3*time.Minute))

	It("runs two gateway pods with no data claim, spread by anti-affinity and guarded by a PodDisruptionBudget", func(ctx SpecContext) {
		var d appsv1.Deployment
		Expect(k.c.Get(ctx, client.ObjectKey{Namespace: ns(), Name: gs.Name + "-gateway"}, &d)).To(Succeed())
		Expect(*d.Spec.Replicas).To(Equal(int32(2)))
		Expect(d.Spec.Strategy.Type).To(Equal(appsv1.RollingUpdateDeploymentStrategyType))
		for _, v := range d.Spec.Template.Spec.Volumes {
			Expect(v.PersistentVolumeClaim).To(BeNil(), "volume %s: a shared-store gateway has no claim", v.Name)
		}
		var claim corev1.PersistentVolumeClaim
		err := k.c.Get(ctx, client.ObjectKey{Namespace: ns(), Name: gs.Name + "-gateway-data"}, &claim)
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "gateway data claim: %v", err)
	}, NodeTimeout(time.Minute))

	It("holds one ask budget across both replicas", func(ctx SpecContext) {
		pods, err := k.gatewayPods(ctx, gs)
		Expect(err).NotTo(HaveOccurred())
		Expect(pods).To(HaveLen(2))
		var steps []llmdouble.ScriptStep
		for i := range 12 {
			steps = append(steps, llmdouble.ScriptStep{Text: fmt.Sprintf("answer %d", i)})
		}
		Expect(double.script(ctx, steps...)).To(Succeed())

		// Six calls at each pod, all at once: the budget of 6 a minute is
		// the bridge's, so exactly 6 are answered, whichever pod took them.
		type result struct {
			pod, kind string
		}
		results := make(chan result, 12)
		var wg sync.WaitGroup
		for _, p := range pods {
			pc, stop, err := k.podClient(gs, &p)
			Expect(err).NotTo(HaveOccurred())
			defer stop()
			for i := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					text, isErr, err := pc.ToolText(ctx, ownerKey, "garra_ask", map[string]any{"message": fmt.Sprintf("question %d", i)})
					switch {
					case err != nil:
						results <- result{p.Name, "transport: " + err.Error()}
					case !isErr:
						results <- result{p.Name, "ok"}
					default:
						var env mcphttp.AgentEnvelope
						if json.Unmarshal([]byte(text), &env) != nil || env.Error == nil {
							results <- result{p.Name, "unparsed: " + text}
							return
						}
						results <- result{p.Name, env.Error.Kind}
					}
				}()
			}
		}
		wg.Wait()
		close(results)
		kinds := map[string]int{}
		perPod := map[string]int{}
		for r := range results {
			kinds[r.kind]++
			if r.kind == "ok" {
				perPod[r.pod]++
			}
		}
		GinkgoWriter.Printf("budget 6 across 2 replicas: outcomes %v, answered per pod %v\n", kinds, perPod)
		Expect(kinds).To(Equal(map[string]int{"ok": 6, "over_budget": 6}))
		reqs, err := double.requests(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(reqs.Requests).To(HaveLen(6), "the model saw exactly the answered asks")
	}, NodeTimeout(2*time.Minute))

	It("keeps one tenant whole while another floods ten times its quota across both replicas", func(ctx SpecContext) {
		pods, err := k.gatewayPods(ctx, gs)
		Expect(err).NotTo(HaveOccurred())
		Expect(pods).To(HaveLen(2))
		var steps []llmdouble.ScriptStep
		for i := range 4 * fairQuota {
			steps = append(steps, llmdouble.ScriptStep{Text: fmt.Sprintf("run %d", i)})
		}
		Expect(double.script(ctx, steps...)).To(Succeed())

		kindOf := func(env mcphttp.AgentEnvelope, raw string, err error) string {
			switch {
			case err != nil:
				return "transport: " + err.Error()
			case env.OK:
				return "ok"
			case env.Error == nil:
				return "unparsed: " + raw
			}
			return env.Error.Kind
		}
		// flood: ten times its quota, every call at once, half at each pod.
		type result struct{ pod, kind string }
		floods := make(chan result, 10*fairQuota)
		var clients []*gatewayClient
		for _, p := range pods {
			pc, stop, err := k.podClient(gs, &p)
			Expect(err).NotTo(HaveOccurred())
			defer stop()
			clients = append(clients, pc)
		}
		var wg sync.WaitGroup
		for i := range 10 * fairQuota {
			wg.Go(func() {
				env, raw, _, err := clients[i%2].Agent(ctx, floodKey, fmt.Sprintf("flood %d", i))
				floods <- result{pods[i%2].Name, kindOf(env, raw, err)}
			})
		}
		// steady: its whole quota, one call after another through the
		// Service while the flood is on.
		var steady []string
		for i := range fairQuota {
			env, raw, _, err := gw.Agent(ctx, steadyKey, fmt.Sprintf("steady %d", i))
			steady = append(steady, kindOf(env, raw, err))
		}
		wg.Wait()
		close(floods)
		kinds := map[string]int{}
		perPod := map[string]map[string]int{}
		for r := range floods {
			kinds[r.kind]++
			if perPod[r.pod] == nil {
				perPod[r.pod] = map[string]int{}
			}
			perPod[r.pod][r.kind]++
		}
		GinkgoWriter.Printf("quota %d a minute each, 2 replicas: flood %v (per pod %v), steady %v\n", fairQuota, kinds, perPod, steady)
		Expect(steady).To(HaveEach("ok"), "every call of the tenant at its pace succeeds")
		Expect(kinds).To(Equal(map[string]int{"ok": fairQuota, "over_quota": 9 * fairQuota}))
		reqs, err := double.requests(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(reqs.Requests).To(HaveLen(2*fairQuota), "the model saw exactly the sum of the two quotas")
	}, NodeTimeout(3*time.Minute))

	It("loses no call of a 100 ms stream while one gateway pod is deleted with an agent run in flight", func(ctx SpecContext) {
		pods, err := k.gatewayPods(ctx, gs)
		Expect(err).NotTo(HaveOccurred())
		Expect(pods).To(HaveLen(2))
		victim := pods[0]

		// An agent run on the pod that goes away, still thinking when the
		// pod is deleted: it finishes there (the drain waits for it) while
		// the victim refuses new work.
		Expect(double.script(ctx, llmdouble.ScriptStep{Text: "finished on the old pod", DelayMS: 8000})).To(Succeed())
		vc, stopVC, err := k.podClient(gs, &victim)
		Expect(err).NotTo(HaveOccurred())
		defer stopVC()
		type runResult struct {
			env  mcphttp.AgentEnvelope
			raw  string
			err  error
			took time.Duration
		}
		run := make(chan runResult, 1)
		go func() {
			start := time.Now()
			env, raw, _, err := vc.Agent(ctx, alphaKey, "Think for a while.")
			run <- runResult{env, raw, err, time.Since(start)}
		}()
		Eventually(func(g Gomega) {
			reqs, err := double.requests(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(reqs.Requests).To(HaveLen(1))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

		// Two callers at once, each calling every 100 ms through the
		// Service: one opens a connection per call (curl, n8n's HTTP node),
		// the other keeps its connections alive (an SDK client), so that
		// some of them are pinned to the pod that goes away.
		kept := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 16}}
		callers := map[string]*gatewayClient{
			"a connection per call":  gw,
			"kept-alive connections": newGatewayClient(serviceURL(ns(), gs.Name+"-gateway", controllers.GatewayPort), kept),
		}
		var (
			mu       sync.Mutex
			outcomes = map[string][]callOutcome{}
		)
		streamCtx, stopStream := context.WithCancel(ctx)
		var streams, calls sync.WaitGroup
		for name, c := range callers {
			streams.Add(1)
			go func() {
				defer streams.Done()
				tick := time.NewTicker(100 * time.Millisecond)
				defer tick.Stop()
				for {
					select {
					case <-streamCtx.Done():
						return
					case <-tick.C:
					}
					// Each call on its own: a slow one does not hold the next back.
					calls.Add(1)
					go func() {
						defer calls.Done()
						o := callOutcome{at: time.Now()}
						text, isErr, err := c.ToolText(ctx, ownerKey, "garra_status", map[string]any{})
						switch {
						case err != nil:
							o.err = err.Error()
						case isErr:
							o.err = "tool error: " + text
						}
						mu.Lock()
						outcomes[name] = append(outcomes[name], o)
						mu.Unlock()
					}()
				}
			}()
		}

		time.Sleep(2 * time.Second)
		deleted := time.Now()
		Expect(k.c.Delete(ctx, &victim)).To(Succeed())
		// Until the replacement is serving and the old pod is gone, and a
		// little after.
		Eventually(func(g Gomega) {
			now, err := k.gatewayPods(ctx, gs)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(now).To(HaveLen(2))
			for _, p := range now {
				g.Expect(p.UID).NotTo(Equal(victim.UID))
			}
			var old corev1.Pod
			err = k.c.Get(ctx, client.ObjectKeyFromObject(&victim), &old)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "old pod still there")
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		replaced := time.Since(deleted)
		time.Sleep(2 * time.Second)
		stopStream()
		r := <-run
		Expect(r.err).NotTo(HaveOccurred())
		Expect(r.env.Answer).To(Equal("finished on the old pod"), r.raw)
		GinkgoWriter.Printf("the agent run in flight on the deleted pod answered after %.1fs\n", r.took.Seconds())
		streams.Wait()
		calls.Wait()
		kept.CloseIdleConnections()

		mu.Lock()
		defer mu.Unlock()
		var failures []string
		for name, os := range outcomes {
			failed := 0
			for _, o := range os {
				if o.err != "" {
					failed++
					failures = append(failures, fmt.Sprintf("%s %+.1fs: %s", name, o.at.Sub(deleted).Seconds(), o.err))
				}
			}
			GinkgoWriter.Printf("stream (%s): %d calls, %d failed\n", name, len(os), failed)
			Expect(len(os)).To(BeNumerically(">", 40), name)
		}
		GinkgoWriter.Printf("old gateway pod gone and replaced %.1fs after its deletion\n", replaced.Seconds())
		times.record("gateway pod deleted → replaced and old pod gone (2 replicas)", replaced)
		Expect(failures).To(BeEmpty(), strings.Join(failures, "\n"))
	}, NodeTimeout(4*time.Minute))
})
