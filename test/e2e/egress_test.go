//go:build e2e

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/controllers"
	"github.com/garraia/garra/test/fakes/gitdouble"
	"github.com/garraia/garra/test/fakes/llmdouble"
)

// gitName is the in-cluster HTTPS git upstream's Deployment and Service:
// the LLM double's image in its git mode, behind a certificate of a CA the
// test makes (which the gateway is told to trust) and a credential.
const gitName = "gitdouble"

// gitPort is the git double's container port; its Service answers on 443.
const gitPort = 8443

// testCA is a CA of the test's own and a server certificate it signed for
// hosts, all PEM.
func testCA(hosts ...string) (caPEM, certPEM, keyPEM []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "garra e2e upstream CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: hosts[0]}, DNSNames: hosts,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, nil, err
	}
	kd, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kd}), nil
}

// deployGitDouble runs the git double in ns: its certificate from Secret
// tlsSecret, the token it demands from key token of tokenSecret.
func (k *cluster) deployGitDouble(ctx context.Context, ns, tlsSecret, tokenSecret string) error {
	return k.createWorkload(ctx, ns, gitName, corev1.Container{
		Image: k.p.DoubleImage,
		Command: []string{"/llmdouble", "-listen", "127.0.0.1:8080",
			"-git-listen", fmt.Sprintf(":%d", gitPort), "-git-cert", "/tls/tls.crt", "-git-key", "/tls/tls.key",
			"-git-user", "x-access-token", "-git-token-file", "/token/token"},
		Ports: []corev1.ContainerPort{{Name: "https", ContainerPort: gitPort}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: gitdouble.HealthPath, Port: intstr.FromString("https"), Scheme: corev1.URISchemeHTTPS}}, PeriodSeconds: 1},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "tls", MountPath: "/tls", ReadOnly: true},
			{Name: "token", MountPath: "/token", ReadOnly: true},
		},
	}, []corev1.Volume{
		{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: tlsSecret}}},
		{Name: "token", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: tokenSecret}}},
	}, corev1.ServicePort{Name: "https", Port: 443, TargetPort: intstr.FromString("https")})
}

// findSecretScript looks for the value (base64 %[1]s, decoded into a shell
// variable that is never exported) in the environment of every process of
// the pod it may read (one it may not is no more readable to the agent's
// bash, which runs as the same user) and in every file the container can
// read but the kernel's own views, and prints one HIT line per place, then
// "scanned N" with the number of environments read, so an empty result is
// not a scan that read nothing.
const findSecretScript = `t=$(printf %%s '%[1]s' | base64 -d)
b='%[1]s'
n=0; u=0
scan=$(mktemp)
for f in /proc/[0-9]*/environ; do
  if { tr '\0' '\n' < "$f" > "$scan"; } 2>/dev/null; then
    n=$((n+1))
    if grep -qF -- "$t" "$scan"; then echo "HIT $f"; fi
  else
    u=$((u+1))
  fi
done
rm -f "$scan"
grep -rlsF --binary-files=text -e "$t" -e "$b" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev 2>/dev/null | sed 's/^/HIT /'
echo "scanned $n (unreadable $u)"
`

var _ = Describe("A credential the agent uses but never holds (egress: gateway)", Ordered, func() {
	var (
		gs       *garrav1alpha1.GarraServer
		gw       *gatewayClient
		eKey     string
		token    string
		gitHost  string
		sandbox  *corev1.Pod
		cleanups []client.Object
	)
	ns := func() string { return k.p.Namespace }
	sh := func(ctx context.Context, pod *corev1.Pod, script string) string {
		GinkgoHelper()
		return k.sh(ctx, ns(), pod, script)
	}

	BeforeAll(func(ctx SpecContext) {
		gitHost = gitName + "." + ns() + ".svc"
		raw := make([]byte, 24)
		_, err := rand.Read(raw)
		Expect(err).NotTo(HaveOccurred())
		token = "ghp_e2e" + hex.EncodeToString(raw)

		caPEM, certPEM, keyPEM, err := testCA(gitHost, gitName, gitName+"."+ns(), gitHost+".cluster.local")
		Expect(err).NotTo(HaveOccurred())
		secrets := []*corev1.Secret{
			{ObjectMeta: metav1.ObjectMeta{Name: "gitdouble-tls", Namespace: ns()}, Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM}},
			{ObjectMeta: metav1.ObjectMeta{Name: "gitdouble-ca", Namespace: ns()}, Data: map[string][]byte{"ca.crt": caPEM}},
			// The one Secret that holds the credential: read by the git
			// double and by the operator, never by the sandbox.
			{ObjectMeta: metav1.ObjectMeta{Name: "git-credential", Namespace: ns()}, Data: map[string][]byte{"token": []byte(token)}},
		}
		for _, s := range secrets {
			Expect(k.c.Create(ctx, s)).To(Succeed())
			cleanups = append(cleanups, s)
		}
		Expect(k.deployGitDouble(ctx, ns(), "gitdouble-tls", "git-credential")).To(Succeed())
		cleanups = append(cleanups, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: gitName, Namespace: ns()}},
			&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: gitName, Namespace: ns()}})

		gs = newGarraServer(k.p, "egress-e2e",
			orch{name: "e", tools: []garrav1alpha1.Tool{garrav1alpha1.ToolStatus, garrav1alpha1.ToolAgent}})
		// The upstream is a ClusterIP, a private address: the gateway's
		// guard lets it through only because it is listed, and trusts its
		// certificate only because its CA is named.
		gs.Spec.Gateway.WebFetchAllowedHosts = []string{gitHost}
		gs.Spec.Gateway.Egress = &garrav1alpha1.GatewayEgressSpec{
			TrustedCASecretRef: &garrav1alpha1.SecretKeySelector{Name: "gitdouble-ca", Key: "ca.crt"},
		}
		o := &gs.Spec.Orchestrators[0]
		o.Sandbox.Egress = garrav1alpha1.EgressGateway
		o.Credentials = []garrav1alpha1.CredentialSpec{{
			Name:      "git",
			SecretRef: garrav1alpha1.SecretKeySelector{Name: "git-credential", Key: "token"},
			Hosts:     []string{gitHost},
			Inject:    garrav1alpha1.CredentialInject{Scheme: garrav1alpha1.CredentialBasic, Username: "x-access-token"},
		}}
		took := applyReady(ctx, gs)
		times.record("GarraServer with egress: gateway applied → Ready", took)
		waitVerified(ctx, gs)

		Eventually(func(g Gomega) {
			var d appsv1.Deployment
			g.Expect(k.c.Get(ctx, client.ObjectKey{Namespace: ns(), Name: gitName}, &d)).To(Succeed())
			g.Expect(d.Status.AvailableReplicas).To(BeNumerically(">=", 1))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())

		sandbox, err = k.runningPod(ctx, ns(), podLabels(gs, controllers.ComponentSandbox, "e"))
		Expect(err).NotTo(HaveOccurred())
		eKey, err = k.secretValue(ctx, ns(), gs.Name+"-orch-e", controllers.KeyToken)
		Expect(err).NotTo(HaveOccurred())
		gw = gatewayOf(gs)
	}, NodeTimeout(8*time.Minute))

	AfterAll(func(ctx SpecContext) {
		if gs != nil {
			Expect(k.deleteAndWait(ctx, gs)).To(Succeed())
		}
		for _, o := range cleanups {
			Expect(k.deleteAndWait(ctx, o)).To(Succeed())
		}
	}, NodeTimeout(3*time.Minute))

	It("clones the private repository through the gateway, which adds the credential", func(ctx SpecContext) {
		url := "https://" + gitHost + gitdouble.RepoPath
		Expect(double.script(ctx,
			toolCall("bash", map[string]string{"command": "GIT_TERMINAL_PROMPT=0 git clone --quiet " + url + " repo && cat repo/README.md && git -C repo remote get-url origin"}),
			// env alone is an environment dump, which the gate refuses;
			// the proxy's host is shown without its user info.
			toolCall("bash", map[string]string{"command": `printf 'HTTPS_PROXY host: %s\n' "${HTTPS_PROXY##*@}"; cat repo/.git/config`}),
			llmdouble.ScriptStep{Text: "cloned"},
		)).To(Succeed())
		env, raw, isErr, err := gw.Agent(ctx, eKey, "Clone the repository and look around.")
		Expect(err).NotTo(HaveOccurred())
		Expect(isErr).To(BeFalse(), raw)
		Expect(env.ToolCalls).To(HaveLen(2), raw)
		Expect(env.ToolCalls[0].Success).To(BeTrue(), raw)
		Expect(raw).NotTo(ContainSubstring(token), "the envelope the orchestrator reads")

		reqs, err := double.requests(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(reqs.Requests).To(HaveLen(3))
		// What the model saw: the clone worked, and no tool output held
		// the credential.
		Expect(reqs.Requests[1].RawBody).To(ContainSubstring(strings.TrimSpace(gitdouble.ReadmeText)))
		Expect(reqs.Requests[2].RawBody).To(ContainSubstring("HTTPS_PROXY host: "+gs.Name+"-gateway"), "the bash call's view of its proxy reached the model")
		for i, r := range reqs.Requests {
			Expect(r.RawBody).NotTo(ContainSubstring(token), "model request %d", i)
			Expect(r.RawBody).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte("x-access-token:"+token))), "model request %d", i)
		}
	}, NodeTimeout(4*time.Minute))

	It("leaves no byte of the credential in the sandbox: pod spec, env, files, /proc/*/environ", func(ctx SpecContext) {
		var pod corev1.Pod
		Expect(k.c.Get(ctx, client.ObjectKeyFromObject(sandbox), &pod)).To(Succeed())
		specJSON, err := json.Marshal(pod.Spec)
		Expect(err).NotTo(HaveOccurred())
		spec := string(specJSON)
		Expect(spec).NotTo(ContainSubstring(token))
		Expect(spec).NotTo(ContainSubstring("git-credential"), "the pod refers to no Secret of the credential")
		var own corev1.Secret
		Expect(k.c.Get(ctx, client.ObjectKey{Namespace: ns(), Name: gs.Name + "-sandbox-e"}, &own)).To(Succeed())
		Expect(own.Data).To(HaveKey(controllers.KeyEgressCA))
		Expect(own.Data).NotTo(HaveKey("tls.key"))
		for key, v := range own.Data {
			Expect(string(v)).NotTo(ContainSubstring(token), key)
		}

		out := sh(ctx, sandbox, fmt.Sprintf(findSecretScript, base64.StdEncoding.EncodeToString([]byte(token))))
		GinkgoWriter.Printf("credential search in %s:\n%s", sandbox.Name, out)
		Expect(out).NotTo(ContainSubstring("HIT"))
		Expect(out).To(MatchRegexp(`scanned [1-9]`), "environments were read")
		// The search found what it looks for when it is there: the cloned
		// README, by the same grep.
		probe := sh(ctx, sandbox, fmt.Sprintf(`grep -rlsF --binary-files=text -e %q /workspace | head -1`, strings.TrimSpace(gitdouble.ReadmeText)))
		Expect(probe).To(ContainSubstring("/workspace/repo/README.md"))
	}, NodeTimeout(3*time.Minute))

	It("drops the sandbox's direct connection to the upstream; only the proxy port of the gateway is open", func(ctx SpecContext) {
		if os.Getenv("NETPOL") == "0" {
			Skip("NetworkPolicy is not enforced on this cluster (NETPOL=0)")
		}
		probe := func(host string, port int32) string {
			return strings.TrimSpace(sh(ctx, sandbox, fmt.Sprintf(probeScript, host, port, int(probeBound.Seconds()))))
		}
		gitSvc, err := k.serviceAddr(ctx, ns(), gitName, 443)
		Expect(err).NotTo(HaveOccurred())
		gitIP := strings.Split(gitSvc, ":")[0]
		gitPod, err := k.runningPod(ctx, ns(), map[string]string{"app.kubernetes.io/name": gitName})
		Expect(err).NotTo(HaveOccurred())
		gwSvc, err := k.serviceAddr(ctx, ns(), gs.Name+"-gateway", controllers.EgressPort)
		Expect(err).NotTo(HaveOccurred())
		gwIP := strings.Split(gwSvc, ":")[0]

		Eventually(func() string { return probe(gwIP, controllers.EgressPort) }).
			WithContext(ctx).WithTimeout(20*time.Second).WithPolling(time.Second).Should(Equal("open"), "the gateway's egress proxy")
		for what, target := range map[string]struct {
			host string
			port int32
		}{
			"the upstream's Service":   {gitIP, 443},
			"the upstream's pod":       {gitPod.Status.PodIP, gitPort},
			"the gateway's MCP port":   {gwIP, controllers.GatewayPort},
			"the LLM double's Service": {doubleName + "." + ns() + ".svc", 8080},
		} {
			Expect(probe(target.host, target.port)).To(Equal("closed"), what)
		}

		// And git itself, told to bypass the proxy, gets nowhere.
		out := sh(ctx, sandbox, fmt.Sprintf(`cd /tmp && timeout 20 env -u HTTPS_PROXY -u https_proxy -u HTTP_PROXY -u http_proxy GIT_TERMINAL_PROMPT=0 git clone --quiet https://%s%s direct 2>&1; echo "exit $?"`,
			gitHost, gitdouble.RepoPath))
		Expect(out).NotTo(MatchRegexp(`exit 0\s*$`), out)
	}, NodeTimeout(2*time.Minute))
})
