package controllers

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/sandboxz"
)

const (
	timeout  = 20 * time.Second
	interval = 100 * time.Millisecond
)

// newNamespace creates a namespace of its own for one spec. Its
// GarraServers are deleted when the spec ends: envtest has no namespace
// controller, and servers left behind would keep the one controller busy
// with their periodic passes while later specs wait for theirs.
func newNamespace() string {
	GinkgoHelper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "garra-"}}
	must(k8sClient.Create(ctx, ns))
	DeferCleanup(func() {
		Expect(k8sClient.DeleteAllOf(ctx, &garrav1alpha1.GarraServer{}, client.InNamespace(ns.Name))).To(Succeed())
	})
	return ns.Name
}

func secret(ns, name string, data map[string]string) *corev1.Secret {
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: data}
	must(k8sClient.Create(ctx, s))
	return s
}

// twoOrchestrators is team-a with the Secrets it names: badgood (generated
// token, egress none) and n8n (its own token, egress internet, retained
// workspace), Telegram with one approved chat, ask and agent on.
func twoOrchestrators(ns string) *garrav1alpha1.GarraServer {
	GinkgoHelper()
	secret(ns, "llm-keys", map[string]string{"openrouter": "sk-or-test"})
	secret(ns, "tg", map[string]string{"token": "123:telegram"})
	secret(ns, "n8n-token", map[string]string{"token": "n8n-bearer-0123456789abcdef0123456789"})
	gs := &garrav1alpha1.GarraServer{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: ns},
		Spec: garrav1alpha1.GarraServerSpec{
			LLM: garrav1alpha1.LLMSpec{
				Provider:        garrav1alpha1.ProviderOpenRouter,
				Model:           "z-ai/glm-5.3-flash",
				APIKeySecretRef: &garrav1alpha1.SecretKeySelector{Name: "llm-keys", Key: "openrouter"},
			},
			Gateway: garrav1alpha1.GatewaySpec{
				AllowSend:      true,
				AllowAsk:       true,
				AllowAgent:     true,
				RedactPatterns: []string{"corp-[0-9]{6}"},
			},
			Channels: &garrav1alpha1.ChannelsSpec{Telegram: &garrav1alpha1.TelegramSpec{
				BotTokenSecretRef: &garrav1alpha1.SecretKeySelector{Name: "tg", Key: "token"},
				ProactiveChatIDs:  []string{"-1001234567890"},
				Allowlist:         []string{"42"},
			}},
			Orchestrators: []garrav1alpha1.OrchestratorSpec{
				{Name: "badgood", OrchestratorSettings: garrav1alpha1.OrchestratorSettings{Tools: []garrav1alpha1.Tool{"status", "agent"}}},
				{
					Name: "n8n",
					OrchestratorSettings: garrav1alpha1.OrchestratorSettings{
						Tools:          []garrav1alpha1.Tool{"status", "list_chats", "send_message"},
						Chats:          []string{"telegram:-1001234567890"},
						TokenSecretRef: &garrav1alpha1.SecretKeySelector{Name: "n8n-token", Key: "token"},
						Workspace:      garrav1alpha1.WorkspaceSpec{Retain: true},
						Sandbox:        garrav1alpha1.SandboxSpec{Egress: garrav1alpha1.EgressInternet},
					},
				},
			},
		},
	}
	must(k8sClient.Create(ctx, gs))
	return gs
}

func get[T client.Object](ns, name string, obj T) T {
	GinkgoHelper()
	must(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj))
	return obj
}

func server(ns string) *garrav1alpha1.GarraServer {
	GinkgoHelper()
	return get(ns, "team-a", &garrav1alpha1.GarraServer{})
}

// names lists the names of every object of a kind in ns, minus what the
// API server itself puts there.
func names(ns string, list client.ObjectList) []string {
	GinkgoHelper()
	must(k8sClient.List(ctx, list, client.InNamespace(ns)))
	objs, err := objectsOfAny(list)
	must(err)
	var out []string
	for _, o := range objs {
		if o.GetName() == "kube-root-ca.crt" || o.GetName() == "default" || o.GetDeletionTimestamp() != nil {
			continue
		}
		out = append(out, o.GetName())
	}
	sort.Strings(out)
	return out
}

func objectsOfAny(list client.ObjectList) ([]client.Object, error) {
	if l, ok := list.(*corev1.ConfigMapList); ok {
		var out []client.Object
		for i := range l.Items {
			out = append(out, &l.Items[i])
		}
		return out, nil
	}
	return objectsOf(list)
}

// tableObjects is what ARCHITECTURE.md's table says team-a owns, by kind.
func tableObjects(orchs ...string) map[string][]string {
	want := map[string][]string{
		"Secret":                {"team-a-gateway", "team-a-gateway-tokens"},
		"ConfigMap":             {"team-a-gateway"},
		"PersistentVolumeClaim": {"team-a-gateway-data"},
		"Deployment":            {"team-a-gateway"},
		"Service":               {"team-a-gateway"},
		"ServiceAccount":        {"team-a-gateway"},
		"NetworkPolicy":         nil,
	}
	for _, o := range orchs {
		want["Secret"] = append(want["Secret"], "team-a-orch-"+o, "team-a-sandbox-"+o)
		want["PersistentVolumeClaim"] = append(want["PersistentVolumeClaim"], "team-a-ws-"+o)
		for _, k := range []string{"Deployment", "Service", "ServiceAccount", "NetworkPolicy"} {
			want[k] = append(want[k], "team-a-sandbox-"+o)
		}
	}
	for _, v := range want {
		sort.Strings(v)
	}
	return want
}

// children lists team-a's objects by kind (Secrets: only labelled ones,
// so the bring-your-own Secrets of the spec are not counted).
func children(ns string) map[string][]string {
	GinkgoHelper()
	got := map[string][]string{
		"ConfigMap":             names(ns, &corev1.ConfigMapList{}),
		"PersistentVolumeClaim": names(ns, &corev1.PersistentVolumeClaimList{}),
		"Deployment":            names(ns, &appsv1.DeploymentList{}),
		"Service":               names(ns, &corev1.ServiceList{}),
		"ServiceAccount":        names(ns, &corev1.ServiceAccountList{}),
		"NetworkPolicy":         names(ns, &networkingv1.NetworkPolicyList{}),
	}
	secrets := &corev1.SecretList{}
	must(k8sClient.List(ctx, secrets, client.InNamespace(ns), client.MatchingLabels{LabelInstance: "team-a"}))
	for _, s := range secrets.Items {
		if s.DeletionTimestamp == nil {
			got["Secret"] = append(got["Secret"], s.Name)
		}
	}
	sort.Strings(got["Secret"])
	return got
}

func condition(ns, typ string) *metav1.Condition {
	GinkgoHelper()
	return meta.FindStatusCondition(server(ns).Status.Conditions, typ)
}

// markAvailable plays the Deployment controller, which envtest lacks.
func markAvailable(ns, name string, replicas int32) {
	GinkgoHelper()
	Eventually(func() error {
		d := &appsv1.Deployment{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return err
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas}
		return k8sClient.Status().Update(ctx, d)
	}, timeout, interval).Should(Succeed())
}

func podHash(ns, name string) string {
	GinkgoHelper()
	return get(ns, name, &appsv1.Deployment{}).Spec.Template.Annotations[AnnotationInputsHash]
}

func secretData(ns, name string) map[string][]byte {
	GinkgoHelper()
	return get(ns, name, &corev1.Secret{}).Data
}

// secretDataNow is the Secret's data, or nil while it does not exist: a
// rotation deletes the generated Secret before it creates the new one,
// and a poll may fall between the two.
func secretDataNow(ns, name string) map[string][]byte {
	sec := &corev1.Secret{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, sec); err != nil {
		return nil
	}
	return sec.Data
}

// eventReasons are the reasons of the events on team-a.
func eventReasons(ns string) []string {
	GinkgoHelper()
	list := &eventsv1.EventList{}
	must(k8sClient.List(ctx, list, client.InNamespace(ns)))
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "GarraServer" && e.Regarding.Name == "team-a" {
			out = append(out, e.Reason)
		}
	}
	return out
}

func eventNotes(ns, reason string) []string {
	GinkgoHelper()
	list := &eventsv1.EventList{}
	must(k8sClient.List(ctx, list, client.InNamespace(ns)))
	var out []string
	for _, e := range list.Items {
		if e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

// reconciles is the controller's reconcile count so far.
func reconciles() float64 {
	GinkgoHelper()
	n, err := reconcileCount()
	must(err)
	return n
}

// settled waits until team-a's objects exist and the manager has stopped
// writing in ns for a while.
func settled(ns string, orchs ...string) {
	GinkgoHelper()
	Eventually(func() map[string][]string { return children(ns) }, timeout, interval).Should(Equal(tableObjects(orchs...)))
	Eventually(func() int64 { return server(ns).Status.ObservedGeneration }, timeout, interval).Should(Equal(server(ns).Generation))
	quiet(ns)
}

// quiet waits until no write happened in ns for two seconds.
func quiet(ns string) {
	GinkgoHelper()
	last, since := len(writes.in(ns)), time.Now()
	Eventually(func() bool {
		if n := len(writes.in(ns)); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) > 2*time.Second
	}, timeout, interval).Should(BeTrue())
}

// update re-reads team-a, changes it and writes it back.
func update(ns string, change func(*garrav1alpha1.GarraServer)) {
	GinkgoHelper()
	Eventually(func() error {
		gs := server(ns)
		change(gs)
		return k8sClient.Update(ctx, gs)
	}, timeout, interval).Should(Succeed())
}

// podFiles resolves the files of pod's projected volume, mounted at dir, as
// the kubelet would: absolute path → content.
func podFiles(ns string, pod corev1.PodSpec, volume, dir string) map[string]string {
	GinkgoHelper()
	refs, _ := projectedFiles(pod, volume)
	out := map[string]string{}
	for p, ref := range refs {
		name, key, _ := strings.Cut(ref, "/")
		v, ok := secretData(ns, name)[key]
		Expect(ok).To(BeTrue(), "%s: Secret %s has no key %s", p, name, key)
		out[dir+"/"+p] = string(v)
	}
	return out
}

// gatewayFiles resolves the gateway pod's credential files as the kubelet
// would: the owner key from its volume, and every key of the tokens Secret
// as a file of the tokens directory.
func gatewayFiles(ns string, pod corev1.PodSpec) map[string]string {
	GinkgoHelper()
	out := map[string]string{}
	for _, v := range pod.Volumes {
		switch {
		case v.Name == "owner-key" && v.Secret != nil:
			Expect(v.Secret.Items).To(HaveLen(1))
			val, ok := secretData(ns, v.Secret.SecretName)[v.Secret.Items[0].Key]
			Expect(ok).To(BeTrue(), "owner key %s/%s", v.Secret.SecretName, v.Secret.Items[0].Key)
			out[APIKeyFile()] = string(val)
		case v.Name == "tokens" && v.Secret != nil:
			Expect(v.Secret.Items).To(BeEmpty(), "the whole tokens Secret is the directory")
			for k, val := range secretData(ns, v.Secret.SecretName) {
				out[TokensDir+"/"+k] = string(val)
			}
		}
	}
	return out
}

// templateOf is a Deployment's pod template and generation.
func templateOf(ns, name string) (corev1.PodTemplateSpec, int64) {
	GinkgoHelper()
	d := get(ns, name, &appsv1.Deployment{})
	return d.Spec.Template, d.Generation
}

// podEnv resolves a container's variables as the kubelet would.
func podEnv(ns string, c corev1.Container) map[string]string {
	GinkgoHelper()
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			env[e.Name] = e.Value
			continue
		}
		ref := e.ValueFrom.SecretKeyRef
		Expect(ref).NotTo(BeNil(), e.Name)
		v, ok := secretData(ns, ref.Name)[ref.Key]
		Expect(ok).To(BeTrue(), "%s: Secret %s has no key %s", e.Name, ref.Name, ref.Key)
		env[e.Name] = string(v)
	}
	return env
}

var _ = Describe("GarraServer", func() {
	var ns string
	BeforeEach(func() { ns = newNamespace() })

	It("creates exactly the objects of the table, owned, labelled, hardened and wired", func() {
		twoOrchestrators(ns)
		By("waiting for every object of the table")
		settled(ns, "badgood", "n8n")
		gs := server(ns)

		By("checking owners and labels")
		ownedBy := func(obj client.Object) {
			GinkgoHelper()
			refs := obj.GetOwnerReferences()
			Expect(refs).To(HaveLen(1), obj.GetName())
			Expect(refs[0].UID).To(Equal(gs.UID))
			Expect(refs[0].Controller).To(HaveValue(BeTrue()))
		}
		for kind, list := range map[string]client.ObjectList{
			"Secret": &corev1.SecretList{}, "ConfigMap": &corev1.ConfigMapList{}, "PersistentVolumeClaim": &corev1.PersistentVolumeClaimList{},
			"Deployment": &appsv1.DeploymentList{}, "Service": &corev1.ServiceList{}, "ServiceAccount": &corev1.ServiceAccountList{},
			"NetworkPolicy": &networkingv1.NetworkPolicyList{},
		} {
			must(k8sClient.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{LabelInstance: "team-a"}))
			objs, err := objectsOfAny(list)
			must(err)
			for _, obj := range objs {
				l := obj.GetLabels()
				Expect(l).To(HaveKeyWithValue(LabelName, "garra"), kind+" "+obj.GetName())
				o, isOrch := l[LabelOrchestrator]
				if isOrch {
					Expect(l).To(HaveKeyWithValue(LabelComponent, "sandbox"))
					Expect(obj.GetName()).To(HaveSuffix("-" + o))
				} else {
					Expect(l).To(HaveKeyWithValue(LabelComponent, "gateway"))
				}
				if obj.GetName() == "team-a-ws-n8n" {
					Expect(obj.GetOwnerReferences()).To(BeEmpty(), "a retained workspace has no owner")
					continue
				}
				ownedBy(obj)
			}
		}

		By("checking the gateway pod: hardening, mounts, env and files from Secrets")
		gw := get(ns, "team-a-gateway", &appsv1.Deployment{})
		checkRestricted(GinkgoT(), gw.Spec.Template.Spec, true)
		By("the gateway may read exactly its ConfigMap and tokens Secret, nothing else, and no writes")
		Eventually(func() []rbacv1.PolicyRule {
			role := &rbacv1.Role{}
			if k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team-a-gateway-policy"}, role) != nil {
				return nil
			}
			return role.Rules
		}, timeout, interval).Should(Equal([]rbacv1.PolicyRule{
			{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"team-a-gateway"}, Verbs: []string{"get", "list", "watch"}},
			{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{"team-a-gateway-tokens"}, Verbs: []string{"get", "list", "watch"}},
		}))
		binding := &rbacv1.RoleBinding{}
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team-a-gateway-policy"}, binding)
		}, timeout, interval).Should(Succeed())
		Expect(binding.Subjects).To(Equal([]rbacv1.Subject{{Kind: "ServiceAccount", Name: "team-a-gateway", Namespace: ns}}))
		ownedBy(binding)
		Expect(gw.Spec.Strategy.Type).To(Equal(appsv1.RecreateDeploymentStrategyType))
		Expect(gw.Spec.Template.Annotations).To(HaveKey(AnnotationInputsHash))
		c := gw.Spec.Template.Spec.Containers[0]
		Expect(c.Image).To(Equal("garra:test"))
		Expect(c.Command).To(Equal([]string{"garra", "gateway", "--config", "/etc/garra/config.yml"}))
		Expect(mounts(c)).To(Equal(map[string]string{"/etc/garra": "config (ro)", "/var/lib/garra": "data", "/tmp": "tmp",
			"/var/run/garra/owner": "owner-key (ro)", "/var/run/garra/tokens": "tokens (ro)"}))
		Expect(gw.Spec.Template.Spec.TerminationGracePeriodSeconds).To(HaveValue(Equal(int64(40))), "drainSeconds' default 30, plus 10")
		Expect(envFrom(c)).To(Equal(map[string]string{
			"HOME":               "=/tmp",
			"GARRA_LLM_API_KEY":  "llm-keys/openrouter",
			"TELEGRAM_BOT_TOKEN": "tg/token",
		}))
		env := podEnv(ns, c)
		Expect(env["GARRA_LLM_API_KEY"]).To(Equal("sk-or-test"))
		files := gatewayFiles(ns, gw.Spec.Template.Spec)
		orch := secretData(ns, "team-a-orch-badgood")
		n8nOrch := secretData(ns, "team-a-orch-n8n")
		Expect(files).To(Equal(map[string]string{
			APIKeyFile():                string(secretData(ns, "team-a-gateway")["api-key"]),
			OrchTokenFile("badgood"):    string(orch["token"]),
			SandboxTokenFile("badgood"): string(orch["sandbox-token"]),
			OrchTokenFile("n8n"):        "n8n-bearer-0123456789abcdef0123456789",
			SandboxTokenFile("n8n"):     string(n8nOrch["sandbox-token"]),
		}))
		tokens := get(ns, "team-a-gateway-tokens", &corev1.Secret{})
		Expect(tokens.OwnerReferences).To(HaveLen(1))
		Expect(tokens.OwnerReferences[0].UID).To(Equal(gs.UID))

		By("checking the sandbox pods")
		for _, o := range []string{"badgood", "n8n"} {
			d := get(ns, "team-a-sandbox-"+o, &appsv1.Deployment{})
			pod := d.Spec.Template.Spec
			checkRestricted(GinkgoT(), pod, false)
			Expect(pod.ServiceAccountName).To(Equal("team-a-sandbox-" + o))
			sc := pod.Containers[0]
			Expect(sc.Image).To(Equal("garra-sandbox:test"))
			Expect(mounts(sc)).To(Equal(map[string]string{"/workspace": "workspace", "/tmp": "tmp", "/var/run/garra": "token (ro)"}))
			Expect(pod.Volumes).To(ContainElement(HaveField("VolumeSource.PersistentVolumeClaim.ClaimName", "team-a-ws-"+o)))
			Expect(envFrom(sc)).To(Equal(map[string]string{"HOME": "=/tmp"}))
			Expect(sc.Command).To(ContainElements("--token-file", SandboxTokenPath))
			Expect(pod.TerminationGracePeriodSeconds).To(HaveValue(Equal(int64(40))))
			// The gateway and the sandbox hold the same sandbox token, and
			// the sandbox only its own.
			sbFiles := podFiles(ns, pod, "token", SecretsDir)
			Expect(sbFiles).To(Equal(map[string]string{SandboxTokenPath: files[SandboxTokenFile(o)]}))
			Expect(get(ns, "team-a-sandbox-"+o, &corev1.ServiceAccount{}).AutomountServiceAccountToken).To(HaveValue(BeFalse()))
		}
		np := get(ns, "team-a-sandbox-badgood", &networkingv1.NetworkPolicy{})
		Expect(np.Spec.Egress).To(BeEmpty())
		Expect(np.Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress))
		Expect(get(ns, "team-a-sandbox-n8n", &networkingv1.NetworkPolicy{}).Spec.Egress).To(HaveLen(2))

		By("checking the pod templates against the API server's own restricted Pod Security admission")
		nsObj := &corev1.Namespace{}
		must(k8sClient.Get(ctx, client.ObjectKey{Name: ns}, nsObj))
		nsObj.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
		must(k8sClient.Update(ctx, nsObj))
		for _, name := range []string{"team-a-gateway", "team-a-sandbox-badgood", "team-a-sandbox-n8n"} {
			d := get(ns, name, &appsv1.Deployment{})
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name + "-probe", Namespace: ns, Labels: d.Spec.Template.Labels}, Spec: d.Spec.Template.Spec}
			Expect(k8sClient.Create(ctx, pod, client.DryRunAll)).To(Succeed(), name)
		}
		bad := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "root", Namespace: ns},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x"}}}}
		Expect(k8sClient.Create(ctx, bad, client.DryRunAll)).To(MatchError(ContainSubstring("violates PodSecurity")), "the admission check is live")

		By("checking the rendered config.yml as `garra gateway` would load it, with the pod's env and files")
		cm := get(ns, "team-a-gateway", &corev1.ConfigMap{})
		path := filepath.Join(GinkgoT().TempDir(), "config.yml")
		must(os.WriteFile(path, []byte(cm.Data["config.yml"]), 0o600))
		getenv := func(k string) string { return env[k] }
		cfg, _, err := config.Load(path, getenv)
		must(err)
		readFile := func(p string) (string, error) {
			if v, ok := files[p]; ok {
				return v, nil
			}
			return "", fmt.Errorf("%s is not in the pod", p)
		}
		Expect(cfg.CheckWith(getenv, readFile)).To(BeEmpty())
		Expect(cfg.Gateway.APIKeyFile).To(Equal(APIKeyFile()))
		Expect(cfg.Gateway.MCPHTTP.Orchestrators[0].KeyFile).To(Equal(OrchTokenFile("badgood")))
		Expect(cfg.Gateway.Listen).To(Equal("0.0.0.0:3888"))
		Expect(cfg.DataDir).To(Equal("/var/lib/garra"))
		Expect(cfg.Gateway.AllowedHosts).To(Equal([]string{"team-a-gateway", "team-a-gateway." + ns, "team-a-gateway." + ns + ".svc", "team-a-gateway." + ns + ".svc.cluster.local"}))
		Expect(cfg.Gateway.MCPHTTP.Enabled).To(BeTrue())
		Expect(cfg.Gateway.MCPHTTP.AgentMaxSeconds).To(Equal(300), "the CRD's default reached the file")
		Expect(cfg.Gateway.MCPHTTP.Orchestrators).To(HaveLen(2))
		Expect(cfg.Gateway.MCPHTTP.Orchestrators[1].Sandbox.URL).To(Equal("http://team-a-sandbox-n8n." + ns + ".svc:8080/mcp"))
		Expect(cm.Data["config.yml"]).NotTo(ContainSubstring("sk-or-test"))
		for p, v := range files {
			Expect(cm.Data["config.yml"]).NotTo(ContainSubstring(v), p)
		}

		By("checking the events")
		Eventually(func() []string { return eventReasons(ns) }, timeout, interval).Should(ContainElements("SecretGenerated", "OrchestratorAdded"))
		// One event per orchestrator and per Secret, each with its own note,
		// not one folded event that names only the first.
		Eventually(func() []string { return eventNotes(ns, "OrchestratorAdded") }, timeout, interval).Should(ConsistOf(
			ContainSubstring("orchestrator badgood added"), ContainSubstring("orchestrator n8n added")))
		Eventually(func() []string { return eventNotes(ns, "SecretGenerated") }, timeout, interval).Should(ContainElements(
			ContainSubstring("Secret "+ns+"/team-a-orch-badgood "), ContainSubstring("Secret "+ns+"/team-a-orch-n8n ")))
	})

	It("writes status and conditions from the Deployments' availability", func() {
		twoOrchestrators(ns)
		settled(ns, "badgood", "n8n")
		gs := server(ns)
		Expect(gs.Status.Endpoint).To(Equal("http://team-a-gateway." + ns + ".svc:3888/mcp"))
		Expect(gs.Status.OrchestratorsReady).To(Equal("0/2"))
		Expect(gs.Status.ObservedGeneration).To(Equal(gs.Generation))
		Expect(gs.Status.Orchestrators).To(Equal([]garrav1alpha1.OrchestratorStatus{
			{Name: "badgood", TokenSecret: "team-a-orch-badgood", WorkspaceClaim: "team-a-ws-badgood", SandboxEndpoint: "http://team-a-sandbox-badgood." + ns + ".svc:8080/mcp",
				VerifiedReason: ReasonNotChecked, VerifiedMessage: "the gateway could not be asked"},
			{Name: "n8n", TokenSecret: "n8n-token", WorkspaceClaim: "team-a-ws-n8n", SandboxEndpoint: "http://team-a-sandbox-n8n." + ns + ".svc:8080/mcp",
				VerifiedReason: ReasonNotChecked, VerifiedMessage: "the gateway could not be asked"},
		}))
		Expect(condition(ns, "Ready")).To(HaveField("Reason", "NotReady"))
		Expect(condition(ns, "GatewayReady")).To(HaveField("Reason", "Progressing"))
		Expect(condition(ns, "OrchestratorsReady")).To(HaveField("Reason", "Progressing"))

		By("the gateway becomes available")
		markAvailable(ns, "team-a-gateway", 1)
		Eventually(func() string { return condition(ns, "GatewayReady").Reason }, timeout, interval).Should(Equal("Available"))
		Expect(condition(ns, "Ready").Status).To(Equal(metav1.ConditionFalse))

		By("one sandbox becomes available")
		markAvailable(ns, "team-a-sandbox-badgood", 1)
		Eventually(func() string { return server(ns).Status.OrchestratorsReady }, timeout, interval).Should(Equal("1/2"))
		Expect(server(ns).Status.Orchestrators[0].Ready).To(BeTrue())
		Expect(condition(ns, "OrchestratorsReady").Message).To(ContainSubstring("waiting for n8n"))

		By("both sandboxes available: Ready")
		markAvailable(ns, "team-a-sandbox-n8n", 1)
		Eventually(func() *metav1.Condition { return condition(ns, "Ready") }, timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "Ready"), HaveField("ObservedGeneration", gs.Generation)))
		Expect(server(ns).Status.OrchestratorsReady).To(Equal("2/2"))
	})

	It("reports a missing referenced Secret and rolls the gateway when it appears", func() {
		gs := &garrav1alpha1.GarraServer{
			ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: ns},
			Spec: garrav1alpha1.GarraServerSpec{LLM: garrav1alpha1.LLMSpec{
				APIKeySecretRef: &garrav1alpha1.SecretKeySelector{Name: "llm-keys", Key: "openrouter"}}},
		}
		must(k8sClient.Create(ctx, gs))
		Eventually(func() *metav1.Condition { return condition(ns, "GatewayReady") }, timeout, interval).Should(And(
			HaveField("Reason", "SecretMissing"), HaveField("Message", ContainSubstring("llm-keys key openrouter (spec.llm.apiKeySecretRef)"))))
		Eventually(func() []string { return eventReasons(ns) }, timeout, interval).Should(ContainElement("SecretMissing"))
		before := podHash(ns, "team-a-gateway")

		secret(ns, "llm-keys", map[string]string{"openrouter": "sk"})
		Eventually(func() string { return condition(ns, "GatewayReady").Reason }, timeout, interval).Should(Equal("Progressing"))
		Expect(podHash(ns, "team-a-gateway")).NotTo(Equal(before))
	})

	It("raises a Warning event for redact patterns the gateway ignores", func() {
		twoOrchestrators(ns)
		settled(ns, "badgood", "n8n")
		Expect(eventReasons(ns)).NotTo(ContainElement("ConfigWarning"), "the sample's patterns are all usable")

		update(ns, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.RedactPatterns = []string{"corp-[0-9]{6}", "x*", "(", `\b`}
		})
		warnings := func() []string {
			list := &eventsv1.EventList{}
			must(k8sClient.List(ctx, list, client.InNamespace(ns)))
			var out []string
			for _, e := range list.Items {
				if e.Reason == "ConfigWarning" && e.Type == corev1.EventTypeWarning && e.Regarding.Name == "team-a" {
					out = append(out, e.Note)
				}
			}
			return out
		}
		Eventually(warnings, timeout, interval).Should(ContainElement(And(
			ContainSubstring("gateway.mcp_http.redact_patterns[1]: redact pattern 1 skipped: matches the empty string (ignored)"),
			ContainSubstring("gateway.mcp_http.redact_patterns[2]: redact pattern 2 skipped: invalid RE2 syntax"),
			ContainSubstring("gateway.mcp_http.redact_patterns[3]: redact pattern 3 skipped: matches the empty string"),
			Not(ContainSubstring("redact_patterns[0]")))))
		Expect(get(ns, "team-a-gateway", &corev1.ConfigMap{}).Data["config.yml"]).To(ContainSubstring("x*"),
			"the patterns are still rendered: the gateway skips and logs them itself")
	})

	It("adds, changes and removes orchestrators", func() {
		twoOrchestrators(ns)
		settled(ns, "badgood", "n8n")
		gwTmpl, gwGen := templateOf(ns, "team-a-gateway")
		sbTmpl, sbGen := templateOf(ns, "team-a-sandbox-badgood")

		By("adding one")
		update(ns, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators = append(gs.Spec.Orchestrators, garrav1alpha1.OrchestratorSpec{Name: "third", OrchestratorSettings: garrav1alpha1.OrchestratorSettings{
				Tools:   []garrav1alpha1.Tool{"status"},
				Sandbox: garrav1alpha1.SandboxSpec{Image: "custom:1"},
			}})
		})
		settled(ns, "badgood", "n8n", "third")
		Expect(get(ns, "team-a-gateway", &corev1.ConfigMap{}).Data["config.yml"]).To(ContainSubstring("key_file: /var/run/garra/tokens/third"))
		Expect(get(ns, "team-a-sandbox-third", &appsv1.Deployment{}).Spec.Template.Spec.Containers[0].Image).To(Equal("custom:1"))
		Expect(secretData(ns, "team-a-gateway-tokens")).To(HaveKey("third"), "the new orchestrator's token reaches the running gateway as a file")
		Expect(secretData(ns, "team-a-gateway-tokens")).To(HaveKey("third.sandbox"))
		tmpl, gen := templateOf(ns, "team-a-gateway")
		Expect(tmpl).To(Equal(gwTmpl), "the gateway keeps running: it reloads the new orchestrator")
		Expect(gen).To(Equal(gwGen))
		tmpl, gen = templateOf(ns, "team-a-sandbox-badgood")
		Expect(tmpl).To(Equal(sbTmpl), "another's sandbox reads nothing that changed: it keeps running")
		Expect(gen).To(Equal(sbGen))
		Expect(eventNotes(ns, "OrchestratorAdded")).To(ContainElement(ContainSubstring("orchestrator third added")))

		By("changing one: tools and egress")
		update(ns, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[2].Tools = []garrav1alpha1.Tool{"status", "read_history"}
			gs.Spec.Orchestrators[2].Sandbox.Egress = garrav1alpha1.EgressInternet
		})
		Eventually(func() int { return len(get(ns, "team-a-sandbox-third", &networkingv1.NetworkPolicy{}).Spec.Egress) }, timeout, interval).Should(Equal(2))
		Eventually(func() string { return get(ns, "team-a-gateway", &corev1.ConfigMap{}).Data["config.yml"] }, timeout, interval).Should(ContainSubstring("read_history"))
		tmpl, gen = templateOf(ns, "team-a-gateway")
		Expect(tmpl).To(Equal(gwTmpl), "a tools change applies live")
		Expect(gen).To(Equal(gwGen))
		update(ns, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[2].Sandbox.Egress = garrav1alpha1.EgressNone
		})
		Eventually(func() int { return len(get(ns, "team-a-sandbox-third", &networkingv1.NetworkPolicy{}).Spec.Egress) }, timeout, interval).Should(Equal(0))

		By("removing one whose workspace is not retained")
		update(ns, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators = []garrav1alpha1.OrchestratorSpec{gs.Spec.Orchestrators[1], gs.Spec.Orchestrators[2]}
		})
		settled(ns, "n8n", "third")
		Expect(get(ns, "team-a-gateway", &corev1.ConfigMap{}).Data["config.yml"]).NotTo(ContainSubstring("badgood"))
		Expect(secretData(ns, "team-a-gateway-tokens")).NotTo(HaveKey("badgood"), "a removed orchestrator's token is no longer accepted")
		tmpl, _ = templateOf(ns, "team-a-gateway")
		Expect(tmpl).To(Equal(gwTmpl), "removing an orchestrator applies live")
		Expect(eventNotes(ns, "OrchestratorRemoved")).To(ContainElement(ContainSubstring("orchestrator badgood removed")))

		By("removing the one whose workspace is retained: the claim stays, with no owner")
		update(ns, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators = []garrav1alpha1.OrchestratorSpec{gs.Spec.Orchestrators[1]}
		})
		Eventually(func() []string { return children(ns)["Deployment"] }, timeout, interval).Should(Equal([]string{"team-a-gateway", "team-a-sandbox-third"}))
		want := tableObjects("third")
		want["PersistentVolumeClaim"] = append(want["PersistentVolumeClaim"], "team-a-ws-n8n")
		sort.Strings(want["PersistentVolumeClaim"])
		Eventually(func() map[string][]string { return children(ns) }, timeout, interval).Should(Equal(want))
		Expect(get(ns, "team-a-ws-n8n", &corev1.PersistentVolumeClaim{}).OwnerReferences).To(BeEmpty())
		Eventually(func() []string { return eventNotes(ns, "OrchestratorRemoved") }, timeout, interval).Should(
			ContainElement(ContainSubstring("workspace claim team-a-ws-n8n kept (retain)")))
		Expect(server(ns).Status.Orchestrators).To(HaveLen(1))
	})

	It("applies policy changes without rolling the gateway, and reports which config it runs", func() {
		twoOrchestrators(ns)
		settled(ns, "badgood", "n8n")
		gwTmpl, gwGen := templateOf(ns, "team-a-gateway")
		configHash := func() string {
			GinkgoHelper()
			return ConfigHash(get(ns, "team-a-gateway", &corev1.ConfigMap{}).Data["config.yml"])
		}
		Eventually(func() string { return server(ns).Status.ConfigHash }, timeout, interval).Should(Equal(configHash()))
		Expect(condition(ns, "ConfigApplied")).To(And(HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "Pending"),
			HaveField("Message", ContainSubstring("available replica"))), "a gateway without a replica is not asked")
		markAvailable(ns, "team-a-gateway", 1)
		Eventually(func() *metav1.Condition { return condition(ns, "ConfigApplied") }, timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "Pending"),
			HaveField("Message", ContainSubstring("(none reported)"))), "the gateway has reported no config yet")

		By("the gateway reports the rendered hash: Applied")
		gateways.set(ns, configHash(), "")
		Eventually(func() *metav1.Condition { return condition(ns, "ConfigApplied") }, timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "Applied")))

		By("a budget, chats and a new orchestrator: the ConfigMap and tokens change, the pod template does not")
		old := configHash()
		update(ns, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.AskBudgetPerMinute = 3
			gs.Spec.Orchestrators[1].Chats = []string{"telegram:-1001234567890", "telegram:7"}
			gs.Spec.Orchestrators = append(gs.Spec.Orchestrators, garrav1alpha1.OrchestratorSpec{Name: "third", OrchestratorSettings: garrav1alpha1.OrchestratorSettings{Tools: []garrav1alpha1.Tool{"status"}}})
		})
		settled(ns, "badgood", "n8n", "third")
		Expect(get(ns, "team-a-gateway", &corev1.ConfigMap{}).Data["config.yml"]).To(And(
			ContainSubstring("ask_budget_per_minute: 3"), ContainSubstring("telegram:7"), ContainSubstring("key_file: /var/run/garra/tokens/third")))
		tmpl, gen := templateOf(ns, "team-a-gateway")
		Expect(tmpl).To(Equal(gwTmpl))
		Expect(gen).To(Equal(gwGen), "no write reached the gateway Deployment's spec")
		Expect(server(ns).Status.ConfigHash).To(Equal(configHash()))
		Expect(configHash()).NotTo(Equal(old))

		By("the gateway still runs the old config: Pending, naming both")
		Eventually(func() *metav1.Condition { return condition(ns, "ConfigApplied") }, timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "Pending"),
			HaveField("Message", And(ContainSubstring(old), ContainSubstring(configHash())))))

		By("the gateway refused it: Rejected, naming the problem")
		gateways.set(ns, old, "gateway.mcp_http.orchestrators[2].key_file: /var/run/garra/tokens/third: no such file")
		Eventually(func() *metav1.Condition { return condition(ns, "ConfigApplied") }, timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "Rejected"),
			HaveField("Message", ContainSubstring("orchestrators[2].key_file: /var/run/garra/tokens/third: no such file"))))

		By("it loads it on its next reload: Applied, found by the requeue alone")
		gateways.set(ns, configHash(), "")
		Eventually(func() string { return condition(ns, "ConfigApplied").Reason }, timeout, interval).Should(Equal("Applied"))

		By("the image and the drain need a new process: the template changes")
		update(ns, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Image = "garra:2"
			gs.Spec.Gateway.DrainSeconds = 90
		})
		Eventually(func() string {
			return get(ns, "team-a-gateway", &appsv1.Deployment{}).Spec.Template.Spec.Containers[0].Image
		}, timeout, interval).Should(Equal("garra:2"))
		d := get(ns, "team-a-gateway", &appsv1.Deployment{})
		Expect(d.Generation).To(BeNumerically(">", gwGen))
		Expect(d.Spec.Template.Spec.TerminationGracePeriodSeconds).To(HaveValue(Equal(int64(100))))
		Eventually(func() *int64 {
			return get(ns, "team-a-sandbox-badgood", &appsv1.Deployment{}).Spec.Template.Spec.TerminationGracePeriodSeconds
		}, timeout, interval).Should(HaveValue(Equal(int64(100))))
	})

	It("suspends an idle sandbox after its idleTimeout, leaves the wake to the gateway, and reports it", func() {
		twoOrchestrators(ns)
		settled(ns, "badgood", "n8n")
		By("a bad idleTimeout is refused naming the field")
		gs := server(ns)
		gs.Spec.Orchestrators[0].Sandbox.IdleTimeout = &metav1.Duration{Duration: time.Second}
		err := k8sClient.Update(ctx, gs)
		Expect(err).To(HaveOccurred())
		Expect(err.Error()).To(And(ContainSubstring("spec.orchestrators[0].sandbox.idleTimeout"), ContainSubstring("between 10s and 720h")))

		By("idleTimeout 10s on badgood: a wake Role on exactly its Deployment, the gateway mounting its credential")
		update(ns, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].Sandbox.IdleTimeout = &metav1.Duration{Duration: 10 * time.Second}
		})
		Eventually(func() []string {
			role := &rbacv1.Role{}
			if k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team-a-gateway-wake"}, role) != nil || len(role.Rules) == 0 {
				return nil
			}
			return append(role.Rules[0].ResourceNames, role.Rules[0].Verbs...)
		}, timeout, interval).Should(Equal([]string{"team-a-sandbox-badgood", "get", "patch"}))
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team-a-gateway-wake"}, &rbacv1.RoleBinding{})
		}, timeout, interval).Should(Succeed())
		Eventually(func() *bool {
			return get(ns, "team-a-gateway", &appsv1.Deployment{}).Spec.Template.Spec.AutomountServiceAccountToken
		}, timeout, interval).Should(HaveValue(BeTrue()))

		By("a call marked just now keeps it running; a mark older than 10s suspends it")
		mark := func(at time.Time) {
			GinkgoHelper()
			d := get(ns, "team-a-sandbox-badgood", &appsv1.Deployment{})
			patch := client.MergeFrom(d.DeepCopy())
			if d.Annotations == nil {
				d.Annotations = map[string]string{}
			}
			d.Annotations[AnnotationLastCall] = at.UTC().Format(time.RFC3339Nano)
			must(k8sClient.Patch(ctx, d, patch))
		}
		mark(time.Now())
		Consistently(func() int32 { return *get(ns, "team-a-sandbox-badgood", &appsv1.Deployment{}).Spec.Replicas }, 3*time.Second, interval).Should(Equal(int32(1)))
		mark(time.Now().Add(-time.Minute))
		Eventually(func() int32 { return *get(ns, "team-a-sandbox-badgood", &appsv1.Deployment{}).Spec.Replicas }, timeout, interval).Should(Equal(int32(0)))
		Eventually(func() bool { return server(ns).Status.Orchestrators[0].Suspended }, timeout, interval).Should(BeTrue())
		Expect(server(ns).Status.Orchestrators[0].LastCall).NotTo(BeNil())
		Expect(server(ns).Status.Orchestrators[1].Suspended).To(BeFalse())
		Eventually(func() []string { return eventReasons(ns) }, timeout, interval).Should(ContainElement(EventSandboxSuspended))

		By("the gateway's wake (replicas 1 and a fresh mark) is not undone by the operator")
		d := get(ns, "team-a-sandbox-badgood", &appsv1.Deployment{})
		patch := client.MergeFrom(d.DeepCopy())
		d.Spec.Replicas = ptr.To(int32(1))
		d.Annotations[AnnotationLastCall] = time.Now().UTC().Format(time.RFC3339Nano)
		must(k8sClient.Patch(ctx, d, patch, client.FieldOwner("garra-gateway")))
		update(ns, func(gs *garrav1alpha1.GarraServer) { gs.Spec.Gateway.AskBudgetPerMinute = 7 })
		Consistently(func() int32 { return *get(ns, "team-a-sandbox-badgood", &appsv1.Deployment{}).Spec.Replicas }, 3*time.Second, interval).Should(Equal(int32(1)))
		Eventually(func() bool { return server(ns).Status.Orchestrators[0].Suspended }, timeout, interval).Should(BeFalse())

		By("idleTimeout removed: the Role goes, the apply owns replicas again")
		update(ns, func(gs *garrav1alpha1.GarraServer) { gs.Spec.Orchestrators[0].Sandbox.IdleTimeout = nil })
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team-a-gateway-wake"}, &rbacv1.Role{}))
		}, timeout, interval).Should(BeTrue())
	})

	It("reports Verified per orchestrator as the gateway's handshake found, asking as the owner", func() {
		twoOrchestrators(ns)
		settled(ns, "badgood", "n8n")
		Expect(condition(ns, "Verified")).To(And(HaveField("Status", metav1.ConditionUnknown), HaveField("Reason", "Pending"),
			HaveField("Message", ContainSubstring("no available replica"))), "a gateway without a replica is not asked")
		Expect(server(ns).Status.Orchestrators[0].VerifiedReason).To(Equal(ReasonNotChecked))

		By("one sandbox verified, one refusing the gateway's token: Verified False naming it, Ready unchanged")
		gateways.setReport(ns, sandboxz.Report{Sandboxes: map[string]sandboxz.Verdict{
			"badgood": {Verified: true, Message: "ok", Tools: 6, Toolchain: []string{"bash", "git"}},
			"n8n":     {Reason: sandboxz.TokenRefused, Message: "the sandbox refused the gateway's token"},
		}})
		markAvailable(ns, "team-a-gateway", 1)
		Eventually(func() *metav1.Condition { return condition(ns, "Verified") }, timeout, interval).Should(And(
			HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "NotVerified"),
			HaveField("Message", Equal("not verified: n8n (TokenRefused)"))))
		rows := map[string]garrav1alpha1.OrchestratorStatus{}
		for _, o := range server(ns).Status.Orchestrators {
			rows[o.Name] = o
		}
		Expect(rows["badgood"]).To(And(HaveField("Verified", true), HaveField("VerifiedReason", ""), HaveField("Toolchain", []string{"bash", "git"})))
		Expect(rows["n8n"]).To(And(HaveField("Verified", false), HaveField("VerifiedReason", "TokenRefused"),
			HaveField("VerifiedMessage", ContainSubstring("refused"))))
		owner := get(ns, "team-a-gateway", &corev1.Secret{}).Data[KeyAPIKey]
		Expect(gateways.bearer(ns)).To(Equal("Bearer "+string(owner)), "the operator asks with the gateway's key")

		By("repaired: found by the requeue alone, Verified True")
		gateways.setReport(ns, sandboxz.Report{Sandboxes: map[string]sandboxz.Verdict{
			"badgood": {Verified: true, Message: "ok", Tools: 6},
			"n8n":     {Verified: true, Message: "ok", Tools: 6},
		}})
		Eventually(func() *metav1.Condition { return condition(ns, "Verified") }, 2*VerifyRequeue, interval).Should(And(
			HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "Verified")))
	})

	It("rotates a token on request, with an overlap, and a bring-your-own token when it changes", func() {
		twoOrchestrators(ns)
		update(ns, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.TokenRotationGracePeriod = &metav1.Duration{Duration: 3 * time.Second}
		})
		settled(ns, "badgood", "n8n")
		gwTmpl, _ := templateOf(ns, "team-a-gateway")
		sbTmpl, _ := templateOf(ns, "team-a-sandbox-badgood")
		old := secretData(ns, "team-a-orch-badgood")
		Expect(secretData(ns, "team-a-gateway-tokens")).To(HaveKeyWithValue("badgood", old["token"]))

		By("annotating the GarraServer")
		update(ns, func(gs *garrav1alpha1.GarraServer) {
			gs.Annotations = map[string]string{garrav1alpha1.AnnotationRotateToken: "badgood"}
		})
		Eventually(func() []byte { return secretDataNow(ns, "team-a-orch-badgood")["token"] }, timeout, interval).Should(And(Not(BeEmpty()), Not(Equal(old["token"]))))
		cur := secretData(ns, "team-a-orch-badgood")
		Expect(cur["sandbox-token"]).NotTo(Equal(old["sandbox-token"]))
		Eventually(func() map[string]string {
			out := map[string]string{}
			for k, v := range secretData(ns, "team-a-gateway-tokens") {
				out[k] = string(v)
			}
			return out
		}, timeout, interval).Should(And(
			HaveKeyWithValue("badgood", string(cur["token"])+"\n"+string(old["token"])),
			HaveKeyWithValue("badgood.sandbox", string(old["sandbox-token"])+"\n"+string(cur["sandbox-token"]))))
		Eventually(func() map[string]string { return server(ns).Annotations }, timeout, interval).ShouldNot(HaveKey(garrav1alpha1.AnnotationRotateToken))
		Eventually(func() *garrav1alpha1.TokenRotationStatus { return server(ns).Status.Orchestrators[0].TokenRotation }, timeout, interval).ShouldNot(BeNil())
		Expect(eventReasons(ns)).To(ContainElement("TokenRotated"))

		By("after the grace only the new tokens remain, with no event but the requeue")
		Eventually(func() string { return string(secretData(ns, "team-a-gateway-tokens")["badgood"]) }, timeout, interval).Should(Equal(string(cur["token"])))
		Expect(string(secretData(ns, "team-a-gateway-tokens")["badgood.sandbox"])).To(Equal(string(cur["sandbox-token"])))
		Eventually(func() *garrav1alpha1.TokenRotationStatus { return server(ns).Status.Orchestrators[0].TokenRotation }, timeout, interval).Should(BeNil())
		Expect(secretData(ns, "team-a-orch-badgood")).To(Equal(cur), "no second rotation")

		By("a bring-your-own token changed by hand overlaps the same way")
		byo := get(ns, "n8n-token", &corev1.Secret{})
		byo.Data["token"] = []byte("n8n-bearer-2-0123456789abcdef0123456789")
		must(k8sClient.Update(ctx, byo))
		Eventually(func() string { return string(secretData(ns, "team-a-gateway-tokens")["n8n"]) }, timeout, interval).Should(Equal("n8n-bearer-2-0123456789abcdef0123456789\nn8n-bearer-0123456789abcdef0123456789"))
		Eventually(func() string { return string(secretData(ns, "team-a-gateway-tokens")["n8n"]) }, timeout, interval).Should(Equal("n8n-bearer-2-0123456789abcdef0123456789"))

		tmpl, _ := templateOf(ns, "team-a-gateway")
		Expect(tmpl).To(Equal(gwTmpl), "no rotation rolls the gateway")
		tmpl, _ = templateOf(ns, "team-a-sandbox-badgood")
		Expect(tmpl).To(Equal(sbTmpl), "no rotation rolls the sandbox")
	})

	It("rotates once while the server keeps changing under the pass", func() {
		twoOrchestrators(ns)
		update(ns, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.TokenRotationGracePeriod = &metav1.Duration{Duration: time.Minute}
		})
		settled(ns, "badgood", "n8n")
		old := secretData(ns, "team-a-orch-badgood")

		// Something else writes the server all the time (here a label,
		// in a cluster its status and other controllers): the pass that
		// handled the annotation must not fail on a stale version and run
		// the rotation again, which would end the overlap at once.
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer GinkgoRecover()
			defer close(done)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				cur := server(ns)
				patch := client.MergeFrom(cur.DeepCopy())
				if cur.Labels == nil {
					cur.Labels = map[string]string{}
				}
				cur.Labels["bump"] = strconv.Itoa(i)
				_ = k8sClient.Patch(ctx, cur, patch)
			}
		}()
		update(ns, func(gs *garrav1alpha1.GarraServer) {
			gs.Annotations = map[string]string{garrav1alpha1.AnnotationRotateToken: "badgood"}
		})
		Eventually(func() map[string]string { return server(ns).Annotations }, timeout, interval).ShouldNot(HaveKey(garrav1alpha1.AnnotationRotateToken))
		close(stop)
		<-done

		cur := secretDataNow(ns, "team-a-orch-badgood")
		Expect(cur["token"]).NotTo(Equal(old["token"]))
		Eventually(func() string { return string(secretData(ns, "team-a-gateway-tokens")["badgood"]) }, timeout, interval).Should(
			Equal(string(cur["token"])+"\n"+string(old["token"])), "the first token overlaps the one that replaced it: one rotation")
		Consistently(func() []byte { return secretDataNow(ns, "team-a-orch-badgood")["token"] }, 2*time.Second, interval).Should(Equal(cur["token"]))
	})

	It("keeps generated Secrets across reconciles and a manager restart", func() {
		twoOrchestrators(ns)
		settled(ns, "badgood", "n8n")
		gw, orch := secretData(ns, "team-a-gateway"), secretData(ns, "team-a-orch-badgood")
		Expect(gw).To(HaveKey("api-key"))
		Expect(orch).To(HaveKey("token"))
		Expect(orch).To(HaveKey("sandbox-token"))

		By("reconciling after a spec change")
		update(ns, func(gs *garrav1alpha1.GarraServer) { gs.Spec.Gateway.RateLimitPerMinute = 60 })
		Eventually(func() string { return get(ns, "team-a-gateway", &corev1.ConfigMap{}).Data["config.yml"] }, timeout, interval).Should(ContainSubstring("requests_per_minute: 60"))
		Expect(secretData(ns, "team-a-gateway")).To(Equal(gw))
		Expect(secretData(ns, "team-a-orch-badgood")).To(Equal(orch))

		By("restarting the manager")
		mgrRun.stop()
		mgrRun = startManager()
		n := reconciles()
		Eventually(reconciles, timeout, interval).Should(BeNumerically(">", n))
		update(ns, func(gs *garrav1alpha1.GarraServer) { gs.Spec.Gateway.RateLimitPerMinute = 30 })
		Eventually(func() string { return get(ns, "team-a-gateway", &corev1.ConfigMap{}).Data["config.yml"] }, timeout, interval).Should(ContainSubstring("requests_per_minute: 30"))
		Expect(secretData(ns, "team-a-gateway")).To(Equal(gw))
		Expect(secretData(ns, "team-a-orch-badgood")).To(Equal(orch))
	})

	It("recreates a deleted child", func() {
		twoOrchestrators(ns)
		settled(ns, "badgood", "n8n")
		sbTmpl, _ := templateOf(ns, "team-a-sandbox-badgood")
		oldToken := secretData(ns, "team-a-orch-badgood")["sandbox-token"]

		for _, obj := range []client.Object{
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "team-a-sandbox-badgood", Namespace: ns}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "team-a-gateway", Namespace: ns}},
			&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "team-a-gateway", Namespace: ns}},
			&networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "team-a-sandbox-n8n", Namespace: ns}},
			&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "team-a-orch-badgood", Namespace: ns}},
		} {
			must(k8sClient.Delete(ctx, obj))
		}
		settled(ns, "badgood", "n8n")
		By("a deleted generated Secret is generated anew; the old token overlaps with it, no pod rolls")
		newToken := secretData(ns, "team-a-orch-badgood")["sandbox-token"]
		Expect(newToken).NotTo(Equal(oldToken))
		Eventually(func() string { return string(secretData(ns, "team-a-gateway-tokens")["badgood.sandbox"]) }, timeout, interval).Should(
			Equal(string(oldToken) + "\n" + string(newToken)))
		tmpl, _ := templateOf(ns, "team-a-sandbox-badgood")
		Expect(tmpl).To(Equal(sbTmpl))
	})

	It("never writes a bring-your-own Secret, and rolls the gateway when it changes", func() {
		own := secret(ns, "my-key", map[string]string{"api-key": "owner-key"})
		twoOrchestrators(ns)
		settled(ns, "badgood", "n8n")
		update(ns, func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.APIKeySecretRef = &garrav1alpha1.SecretKeySelector{Name: "my-key", Key: "api-key"}
		})
		Eventually(func() map[string]string {
			return gatewayFiles(ns, get(ns, "team-a-gateway", &appsv1.Deployment{}).Spec.Template.Spec)
		}, timeout, interval).Should(HaveKeyWithValue(APIKeyFile(), "owner-key"))
		quiet(ns)
		for _, name := range []string{"my-key", "n8n-token", "llm-keys", "tg"} {
			s := get(ns, name, &corev1.Secret{})
			Expect(s.OwnerReferences).To(BeEmpty(), name)
			Expect(s.Labels).To(BeEmpty(), name)
			for _, mf := range s.ManagedFields {
				Expect(mf.Manager).NotTo(Equal(FieldOwner), name)
			}
		}
		Expect(get(ns, "my-key", &corev1.Secret{}).ResourceVersion).To(Equal(own.ResourceVersion))
		for _, w := range writes.in(ns) {
			for _, byo := range []string{"/secrets/my-key", "/secrets/n8n-token", "/secrets/llm-keys", "/secrets/tg"} {
				Expect(w).NotTo(HaveSuffix(byo))
			}
		}

		By("changing its value rolls the gateway")
		hash := podHash(ns, "team-a-gateway")
		s := get(ns, "my-key", &corev1.Secret{})
		s.Data["api-key"] = []byte("rotated")
		must(k8sClient.Update(ctx, s))
		Eventually(func() string { return podHash(ns, "team-a-gateway") }, timeout, interval).ShouldNot(Equal(hash))
	})

	It("writes nothing on a reconcile that finds everything as desired", func() {
		twoOrchestrators(ns)
		settled(ns, "badgood", "n8n")
		markAvailable(ns, "team-a-gateway", 1)
		Eventually(func() string { return condition(ns, "GatewayReady").Reason }, timeout, interval).Should(Equal("Available"))
		quiet(ns)
		before := writes.in(ns)

		By("triggering reconciles that change nothing the operator owns")
		n := reconciles()
		svc := get(ns, "team-a-gateway", &corev1.Service{})
		svc.Labels["example.com/touched"] = "yes"
		must(k8sClient.Update(ctx, svc))
		Eventually(reconciles, timeout, interval).Should(BeNumerically(">", n))
		n = reconciles()
		gs := server(ns)
		gs.Annotations = map[string]string{"example.com/touched": "yes"}
		must(k8sClient.Update(ctx, gs))
		Eventually(reconciles, timeout, interval).Should(BeNumerically(">", n))
		Consistently(func() []string { return writes.in(ns) }, 3*time.Second, interval).Should(Equal(before))

		By("a real change is a write (the counter works)")
		update(ns, func(gs *garrav1alpha1.GarraServer) { gs.Spec.Gateway.MaxHistoryMessages = 10 })
		Eventually(func() int { return len(writes.in(ns)) }, timeout, interval).Should(BeNumerically(">", len(before)))
		Expect(writes.in(ns)).To(ContainElement(ContainSubstring("/configmaps/team-a-gateway")))
	})

	It("puts a permanent error in the Ready condition and applies nothing", func() {
		mgrRun.stop()
		mgrRun = startManagerWithImages("", "")
		// Back to the suite's manager, whatever happens below.
		DeferCleanup(func() { mgrRun.stop(); mgrRun = startManager() })
		gs := &garrav1alpha1.GarraServer{
			ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: ns},
			Spec:       garrav1alpha1.GarraServerSpec{LLM: garrav1alpha1.LLMSpec{Provider: "ollama"}},
		}
		must(k8sClient.Create(ctx, gs))
		Eventually(func() *metav1.Condition { return condition(ns, "Ready") }, timeout, interval).Should(And(
			HaveField("Reason", "InvalidSpec"), HaveField("Message", ContainSubstring("spec.image"))))
		Eventually(func() []string { return eventReasons(ns) }, timeout, interval).Should(ContainElement("InvalidSpec"))
		Expect(children(ns)["Deployment"]).To(BeEmpty())
		mgrRun.stop()
		mgrRun = startManager()
		update(ns, func(gs *garrav1alpha1.GarraServer) { gs.Spec.Image = "garra:fixed" })
		Eventually(func() string { return condition(ns, "Ready").Reason }, timeout, interval).Should(Equal("NotReady"))
		Expect(get(ns, "team-a-gateway", &appsv1.Deployment{}).Spec.Template.Spec.Containers[0].Image).To(Equal("garra:fixed"))
	})

	It("runs replicas on a shared PostgreSQL store: no claim, a rolling update, a PDB, anti-affinity, and no Lease RBAC", func() {
		secret(ns, "pg", map[string]string{"dsn": "postgres://garra:pw@db:5432/garra"})
		gs := &garrav1alpha1.GarraServer{
			ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: ns},
			Spec: garrav1alpha1.GarraServerSpec{
				LLM: garrav1alpha1.LLMSpec{Provider: "ollama"},
				Gateway: garrav1alpha1.GatewaySpec{Replicas: 3, Store: garrav1alpha1.GatewayStoreSpec{
					Driver: garrav1alpha1.StorePostgres, DSNSecretRef: &garrav1alpha1.SecretKeySelector{Name: "pg", Key: "dsn"}}},
			},
		}
		must(k8sClient.Create(ctx, gs))
		var dep *appsv1.Deployment
		Eventually(func() error {
			dep = &appsv1.Deployment{}
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "team-a-gateway"}, dep)
		}, timeout, interval).Should(Succeed())
		Expect(*dep.Spec.Replicas).To(Equal(int32(3)))
		Expect(dep.Spec.Strategy.Type).To(Equal(appsv1.RollingUpdateDeploymentStrategyType))
		Expect(dep.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue()).To(Equal(0))
		Expect(dep.Spec.Strategy.RollingUpdate.MaxSurge.IntValue()).To(Equal(1))
		pod := dep.Spec.Template.Spec
		Expect(pod.ServiceAccountName).To(Equal("team-a-gateway"))
		Expect(*pod.AutomountServiceAccountToken).To(BeTrue())
		terms := pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		Expect(terms).To(HaveLen(1))
		Expect(terms[0].PodAffinityTerm.TopologyKey).To(Equal(corev1.LabelHostname))
		Expect(terms[0].PodAffinityTerm.LabelSelector.MatchLabels).To(Equal(dep.Spec.Selector.MatchLabels))
		for _, v := range pod.Volumes {
			Expect(v.PersistentVolumeClaim).To(BeNil(), "volume %s is a claim", v.Name)
		}
		env := map[string]corev1.EnvVar{}
		for _, e := range pod.Containers[0].Env {
			env[e.Name] = e
		}
		Expect(env[EnvStoreDSN].ValueFrom.SecretKeyRef.Name).To(Equal("pg"))
		Expect(env[EnvStoreDSN].ValueFrom.SecretKeyRef.Key).To(Equal("dsn"))
		Expect(env).NotTo(HaveKey("GARRA_POLLER_LEASE"), "the poller is elected through the shared store")
		cm := get(ns, "team-a-gateway", &corev1.ConfigMap{}).Data["config.yml"]
		Expect(cm).To(ContainSubstring("driver: postgres"))
		Expect(cm).To(ContainSubstring("dsn_env: " + EnvStoreDSN))
		Expect(cm).NotTo(ContainSubstring("pw@db"))

		Expect(names(ns, &corev1.PersistentVolumeClaimList{})).To(BeEmpty())
		pdb := get(ns, "team-a-gateway", &policyv1.PodDisruptionBudget{})
		Expect(pdb.Spec.MaxUnavailable.IntValue()).To(Equal(1))
		Expect(pdb.Spec.Selector.MatchLabels).To(Equal(dep.Spec.Selector.MatchLabels))
		Expect(get(ns, "team-a-gateway", &corev1.ServiceAccount{}).OwnerReferences).To(HaveLen(1))
		Expect(names(ns, &rbacv1.RoleList{})).NotTo(ContainElement("team-a-gateway-poller"))

		By("deleting the poller Lease's Role and RoleBinding an earlier version made")
		owner := server(ns)
		ref := metav1.OwnerReference{APIVersion: garrav1alpha1.GroupVersion.String(), Kind: "GarraServer", Name: owner.Name,
			UID: owner.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
		legacy := metav1.ObjectMeta{Name: "team-a-gateway-poller", Namespace: ns, OwnerReferences: []metav1.OwnerReference{ref}}
		must(k8sClient.Create(ctx, &rbacv1.Role{ObjectMeta: legacy}))
		must(k8sClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: legacy,
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "team-a-gateway-poller"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "team-a-gateway", Namespace: ns}}}))
		notMine := metav1.ObjectMeta{Name: "team-a-gateway-poller", Namespace: ns}
		update(ns, func(gs *garrav1alpha1.GarraServer) { gs.Spec.Gateway.Replicas = 2 })
		Eventually(func() []string { return names(ns, &rbacv1.RoleList{}) }, timeout, interval).ShouldNot(ContainElement("team-a-gateway-poller"))
		Eventually(func() []string { return names(ns, &rbacv1.RoleBindingList{}) }, timeout, interval).ShouldNot(ContainElement("team-a-gateway-poller"))
		By("leaving alone a Role of that name that the GarraServer does not own")
		must(k8sClient.Create(ctx, &rbacv1.Role{ObjectMeta: notMine}))
		update(ns, func(gs *garrav1alpha1.GarraServer) { gs.Spec.Gateway.Replicas = 3 })
		Eventually(func() int32 { return *get(ns, "team-a-gateway", &appsv1.Deployment{}).Spec.Replicas }, timeout, interval).Should(Equal(int32(3)))
		Expect(names(ns, &rbacv1.RoleList{})).To(ContainElement("team-a-gateway-poller"))

		// The default stays one SQLite replica on its claim, with no SA, Role or PDB.
		ns2 := newNamespace()
		must(k8sClient.Create(ctx, &garrav1alpha1.GarraServer{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: ns2},
			Spec: garrav1alpha1.GarraServerSpec{LLM: garrav1alpha1.LLMSpec{Provider: "ollama"}}}))
		Eventually(func() []string { return names(ns2, &appsv1.DeploymentList{}) }, timeout, interval).Should(Equal([]string{"team-a-gateway"}))
		single := get(ns2, "team-a-gateway", &appsv1.Deployment{})
		Expect(*single.Spec.Replicas).To(Equal(int32(1)))
		Expect(single.Spec.Strategy.Type).To(Equal(appsv1.RecreateDeploymentStrategyType))
		Expect(names(ns2, &corev1.PersistentVolumeClaimList{})).To(Equal([]string{"team-a-gateway-data"}))
		Expect(names(ns2, &policyv1.PodDisruptionBudgetList{})).To(BeEmpty())
		// Only the policy watch's Role: no Lease Role.
		Eventually(func() []string { return names(ns2, &rbacv1.RoleList{}) }, timeout, interval).Should(Equal([]string{"team-a-gateway-policy"}))
		Expect(server(ns2).Spec.Gateway.Store.Driver).To(Equal(garrav1alpha1.StoreSQLite))
		Expect(server(ns2).Spec.Gateway.Replicas).To(Equal(int32(1)))
	})

	It("accepts the sample", func() {
		data, err := os.ReadFile(filepath.Join("..", "config", "samples", "garra_v1alpha1_garraserver.yaml"))
		must(err)
		gs := &garrav1alpha1.GarraServer{}
		must(yaml.UnmarshalStrict(data, gs))
		gs.Namespace = ns
		Expect(gs.Spec.Orchestrators).To(HaveLen(2))
		Expect(k8sClient.Create(ctx, gs, client.DryRunAll)).To(Succeed())
	})

	DescribeTable("rejects an invalid spec, naming the field",
		func(change func(*garrav1alpha1.GarraServer), field, message string) {
			gs := &garrav1alpha1.GarraServer{
				ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: ns},
				Spec: garrav1alpha1.GarraServerSpec{
					LLM:           garrav1alpha1.LLMSpec{Provider: "ollama"},
					Orchestrators: []garrav1alpha1.OrchestratorSpec{{Name: "ok", OrchestratorSettings: garrav1alpha1.OrchestratorSettings{Tools: []garrav1alpha1.Tool{"status"}}}},
				},
			}
			change(gs)
			err := k8sClient.Create(ctx, gs)
			Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			Expect(err.Error()).To(ContainSubstring(field))
			Expect(err.Error()).To(ContainSubstring(message))
		},
		Entry("bad orchestrator name", func(gs *garrav1alpha1.GarraServer) { gs.Spec.Orchestrators[0].Name = "Bad_Name" },
			"spec.orchestrators[0].name", "should match"),
		Entry("an orchestrator named owner", func(gs *garrav1alpha1.GarraServer) { gs.Spec.Orchestrators[0].Name = "owner" },
			"spec.orchestrators[0].name", "owner is reserved by the gateway"),
		Entry("an unknown tool in denyTools", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].DenyTools = []garrav1alpha1.Tool{"shell"}
		}, "spec.orchestrators[0].denyTools[0]", `Unsupported value: "shell"`),
		Entry("a web search base URL that is not http(s)", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.WebSearch = &garrav1alpha1.WebSearchSpec{
				APIKeySecretRef: garrav1alpha1.SecretKeySelector{Name: "brave", Key: "key"}, BaseURL: "ftp://x",
			}
		}, "spec.gateway.webSearch.baseURL", "http or https"),
		Entry("orchestrator name over 40 characters", func(gs *garrav1alpha1.GarraServer) { gs.Spec.Orchestrators[0].Name = strings.Repeat("a", 41) },
			"spec.orchestrators[0].name", "may not be more than 40"),
		Entry("a Basic credential without a user name", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].Credentials = []garrav1alpha1.CredentialSpec{{Name: "github",
				SecretRef: garrav1alpha1.SecretKeySelector{Name: "gh", Key: "token"}, Hosts: []string{"github.com"},
				Inject: garrav1alpha1.CredentialInject{Scheme: garrav1alpha1.CredentialBasic}}}
		}, "spec.orchestrators[0].credentials[0].inject", "inject.username is required with scheme Basic"),
		Entry("an orchestrator's quota below 1", func(gs *garrav1alpha1.GarraServer) {
			zero := int32(0)
			gs.Spec.Orchestrators[0].Quota = &garrav1alpha1.QuotaSpec{AgentConcurrent: &zero}
		}, "spec.orchestrators[0].quota.agentConcurrent", "should be greater than or equal to 1"),
		Entry("the gateway's default quota below 1", func(gs *garrav1alpha1.GarraServer) {
			none := int64(0)
			gs.Spec.Gateway.Quota = &garrav1alpha1.QuotaSpec{LLMTokensPerDay: &none}
		}, "spec.gateway.quota.llmTokensPerDay", "should be greater than or equal to 1"),
		Entry("duplicate orchestrator", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators = append(gs.Spec.Orchestrators, gs.Spec.Orchestrators[0])
		}, "spec.orchestrators[1]", "Duplicate value"),
		Entry("unknown tool", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].Tools = []garrav1alpha1.Tool{"status", "shell"}
		},
			"spec.orchestrators[0].tools[1]", `Unsupported value: "shell"`),
		Entry("drainSeconds -1", func(gs *garrav1alpha1.GarraServer) { gs.Spec.Gateway.DrainSeconds = -1 },
			"spec.gateway.drainSeconds", "greater than or equal to 1"),
		Entry("drainSeconds 601", func(gs *garrav1alpha1.GarraServer) { gs.Spec.Gateway.DrainSeconds = 601 },
			"spec.gateway.drainSeconds", "less than or equal to 600"),
		Entry("a token grace under a second", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.TokenRotationGracePeriod = &metav1.Duration{Duration: time.Millisecond}
		}, "spec.gateway.tokenRotationGracePeriod", "between 1s and 24h"),
		Entry("agentMaxSeconds 601", func(gs *garrav1alpha1.GarraServer) { gs.Spec.Gateway.AgentMaxSeconds = 601 },
			"spec.gateway.agentMaxSeconds", "less than or equal to 600"),
		Entry("agentMaxSeconds 4", func(gs *garrav1alpha1.GarraServer) { gs.Spec.Gateway.AgentMaxSeconds = 4 },
			"spec.gateway.agentMaxSeconds", "greater than or equal to 5"),
		Entry("sqlite with two replicas", func(gs *garrav1alpha1.GarraServer) { gs.Spec.Gateway.Replicas = 2 },
			"spec.gateway.replicas", "set spec.gateway.store.driver to postgres"),
		Entry("an explicit sqlite with three replicas", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.Replicas = 3
			gs.Spec.Gateway.Store.Driver = garrav1alpha1.StoreSQLite
		}, "spec.gateway.replicas", "replicas above 1 need a shared store"),
		Entry("postgres without a DSN Secret", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.Store.Driver = garrav1alpha1.StorePostgres
		}, "spec.gateway.store.dsnSecretRef", "store.driver postgres needs dsnSecretRef"),
		Entry("a DSN Secret with sqlite", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.Store.DSNSecretRef = &garrav1alpha1.SecretKeySelector{Name: "pg", Key: "dsn"}
		}, "spec.gateway.store.dsnSecretRef", "used only with store.driver postgres"),
		Entry("a DSN Secret ref with a bad name", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.Store = garrav1alpha1.GatewayStoreSpec{Driver: garrav1alpha1.StorePostgres,
				DSNSecretRef: &garrav1alpha1.SecretKeySelector{Name: "Bad_Secret", Key: "dsn"}}
		}, "spec.gateway.store.dsnSecretRef.name", "should match"),
		Entry("a DSN Secret ref without a key", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.Store = garrav1alpha1.GatewayStoreSpec{Driver: garrav1alpha1.StorePostgres,
				DSNSecretRef: &garrav1alpha1.SecretKeySelector{Name: "pg"}}
		}, "spec.gateway.store.dsnSecretRef.key", "at least 1"),
		Entry("an unknown store driver", func(gs *garrav1alpha1.GarraServer) { gs.Spec.Gateway.Store.Driver = "mysql" },
			"spec.gateway.store.driver", "Unsupported value"),
		Entry("zero replicas", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.Replicas = -1
		}, "spec.gateway.replicas", "greater than or equal to 1"),
		Entry("allowSend without chat ids", func(gs *garrav1alpha1.GarraServer) { gs.Spec.Gateway.AllowSend = true },
			"spec.gateway.allowSend", "allowSend needs at least one approved destination"),
		Entry("allowSend with an empty telegram section", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.AllowSend = true
			gs.Spec.Channels = &garrav1alpha1.ChannelsSpec{Telegram: &garrav1alpha1.TelegramSpec{}}
		}, "spec.gateway.allowSend", "proactiveChatIDs"),
		Entry("33 redact patterns", func(gs *garrav1alpha1.GarraServer) {
			for i := range 33 {
				gs.Spec.Gateway.RedactPatterns = append(gs.Spec.Gateway.RedactPatterns, fmt.Sprintf("p%d", i))
			}
		}, "spec.gateway.redactPatterns", "must have at most 32 items"),
		Entry("a redact pattern over 512 characters", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.RedactPatterns = []string{strings.Repeat("a", 513)}
		}, "spec.gateway.redactPatterns[0]", "may not be more than 512"),
		Entry("65 web_fetch allowed hosts", func(gs *garrav1alpha1.GarraServer) {
			for i := range 65 {
				gs.Spec.Gateway.WebFetchAllowedHosts = append(gs.Spec.Gateway.WebFetchAllowedHosts, fmt.Sprintf("h%d.internal", i))
			}
		}, "spec.gateway.webFetchAllowedHosts", "must have at most 64 items"),
		Entry("an empty web_fetch allowed host", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Gateway.WebFetchAllowedHosts = []string{"ok.internal", ""}
		}, "spec.gateway.webFetchAllowedHosts[1]", "at least 1"),
		Entry("a chat id that is not a number", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Channels = &garrav1alpha1.ChannelsSpec{Telegram: &garrav1alpha1.TelegramSpec{ProactiveChatIDs: []string{"12a"}}}
		}, "spec.channels.telegram.proactiveChatIDs[0]", "should match"),
		Entry("a provider needing a key without one", func(gs *garrav1alpha1.GarraServer) { gs.Spec.LLM.Provider = "openai" },
			"spec.llm.apiKeySecretRef", "required unless provider is ollama"),
		Entry("an unknown provider", func(gs *garrav1alpha1.GarraServer) { gs.Spec.LLM.Provider = "gemini" },
			"spec.llm.provider", "Unsupported value"),
		Entry("a base URL that is not http(s)", func(gs *garrav1alpha1.GarraServer) { gs.Spec.LLM.BaseURL = "file:///etc/passwd" },
			"spec.llm.baseURL", "http or https"),
		Entry("an OTLP endpoint that is not an http(s) URL", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Telemetry = &garrav1alpha1.TelemetrySpec{OTLPEndpoint: "otel-collector:4318"}
		}, "spec.telemetry.otlpEndpoint", "otlpEndpoint must be an http or https URL"),
		Entry("a telemetry section without an endpoint", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Telemetry = &garrav1alpha1.TelemetrySpec{Sampler: "always_on"}
		}, "spec.telemetry.otlpEndpoint", "at least 1"),
		Entry("an unknown sampler", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Telemetry = &garrav1alpha1.TelemetrySpec{OTLPEndpoint: "http://c:4318", Sampler: "sometimes"}
		}, "spec.telemetry.sampler", "Unsupported value"),
		Entry("a sampler ratio above 1", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Telemetry = &garrav1alpha1.TelemetrySpec{OTLPEndpoint: "http://c:4318", Sampler: "traceidratio", SamplerRatio: "1.5"}
		}, "spec.telemetry.samplerRatio", "should match"),
		Entry("egress other than none|internet", func(gs *garrav1alpha1.GarraServer) { gs.Spec.Orchestrators[0].Sandbox.Egress = "all" },
			"spec.orchestrators[0].sandbox.egress", "Unsupported value"),
		Entry("a runtimeClassName that is not a DNS-1123 subdomain", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].Sandbox.RuntimeClassName = ptr.To("gVisor_runsc")
		}, "spec.orchestrators[0].sandbox.runtimeClassName", "runtimeClassName must be a DNS-1123 subdomain"),
		Entry("33 sandbox node selector labels", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].Sandbox.NodeSelector = map[string]string{}
			for i := range 33 {
				gs.Spec.Orchestrators[0].Sandbox.NodeSelector[fmt.Sprintf("l%d", i)] = "x"
			}
		}, "spec.orchestrators[0].sandbox.nodeSelector", "must have at most 32 items"),
		Entry("a required tool given as a path", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].Sandbox.RequiredTools = []string{"go", "/usr/bin/make"}
		}, "spec.orchestrators[0].sandbox.requiredTools[1]", "should match"),
		Entry("33 required tools", func(gs *garrav1alpha1.GarraServer) {
			for i := range 33 {
				gs.Spec.Orchestrators[0].Sandbox.RequiredTools = append(gs.Spec.Orchestrators[0].Sandbox.RequiredTools, fmt.Sprintf("t%d", i))
			}
		}, "spec.orchestrators[0].sandbox.requiredTools", "must have at most 32 items"),
		Entry("a name that cannot prefix a Service", func(gs *garrav1alpha1.GarraServer) { gs.Name = "team.a" },
			"metadata.name", "DNS-1035 label"),
		Entry("auth with two modes", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].Auth = &garrav1alpha1.OrchestratorAuth{Token: &garrav1alpha1.TokenAuth{},
				ServiceAccount: &garrav1alpha1.ServiceAccountAuth{Name: "bot"}}
		}, "spec.orchestrators[0].auth", "exactly one of token, serviceAccount, oidc"),
		Entry("auth with no mode", func(gs *garrav1alpha1.GarraServer) { gs.Spec.Orchestrators[0].Auth = &garrav1alpha1.OrchestratorAuth{} },
			"spec.orchestrators[0].auth", "exactly one of token, serviceAccount, oidc"),
		Entry("an OIDC issuer that is not https", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].Auth = &garrav1alpha1.OrchestratorAuth{OIDC: &garrav1alpha1.OIDCAuth{Issuer: "http://idp.example.com", Audience: "a", Subject: "s"}}
		}, "spec.orchestrators[0].auth.oidc.issuer", "issuer must be an https URL"),
		Entry("an OIDC entry with neither subject nor claims", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].Auth = &garrav1alpha1.OrchestratorAuth{OIDC: &garrav1alpha1.OIDCAuth{Issuer: "https://idp.example.com", Audience: "a"}}
		}, "spec.orchestrators[0].auth.oidc", "oidc needs subject or claims"),
		Entry("an OIDC entry with an empty audience", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].Auth = &garrav1alpha1.OrchestratorAuth{OIDC: &garrav1alpha1.OIDCAuth{Issuer: "https://idp.example.com", Subject: "s"}}
		}, "spec.orchestrators[0].auth.oidc.audience", "at least 1"),
		Entry("tokenSecretRef beside another mode", func(gs *garrav1alpha1.GarraServer) {
			gs.Spec.Orchestrators[0].TokenSecretRef = &garrav1alpha1.SecretKeySelector{Name: "t", Key: "k"}
			gs.Spec.Orchestrators[0].Auth = &garrav1alpha1.OrchestratorAuth{ServiceAccount: &garrav1alpha1.ServiceAccountAuth{Name: "bot"}}
		}, "spec.orchestrators[0]", "tokenSecretRef is the token mode's"),
		Entry("names too long together", func(gs *garrav1alpha1.GarraServer) {
			gs.Name = strings.Repeat("t", 20)
			gs.Spec.Orchestrators[0].Name = strings.Repeat("o", 35)
		}, "", "together must be at most 54 characters"),
	)
})

// startManagerWithImages starts a manager whose default images are given.
func startManagerWithImages(garra, sandbox string) *managerRun {
	GinkgoHelper()
	old := testImages
	testImages = [2]string{garra, sandbox}
	defer func() { testImages = old }()
	return startManager()
}
