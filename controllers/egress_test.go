package controllers

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/test/fakes/egressdouble"
)

// egressServer is testServer with badgood going out through the gateway
// with a GitHub credential and one more host, and an attached
// Orchestrator team/ci doing the same with an API key.
func egressServer() (*garrav1alpha1.GarraServer, []member) {
	gs := testServer()
	o := &gs.Spec.Orchestrators[0]
	o.Sandbox.Egress = garrav1alpha1.EgressGateway
	o.Sandbox.EgressHosts = []string{"proxy.golang.org"}
	o.Credentials = []garrav1alpha1.CredentialSpec{githubCredential()}
	ob := &garrav1alpha1.Orchestrator{ObjectMeta: metav1.ObjectMeta{Name: "ci", Namespace: "team", UID: "uid-ci"}}
	ob.Spec.Sandbox.Egress = garrav1alpha1.EgressGateway
	ob.Spec.Credentials = []garrav1alpha1.CredentialSpec{{
		Name:      "tickets",
		SecretRef: garrav1alpha1.SecretKeySelector{Name: "tickets", Key: "api-key"},
		Hosts:     []string{"tickets.example.com"},
		Inject:    garrav1alpha1.CredentialInject{Header: "X-Api-Key", Scheme: garrav1alpha1.CredentialNone},
	}}
	return gs, append(inlineMembers(gs), attachedMember(gs, ob))
}

func TestNewEgressCA(t *testing.T) {
	gs := testServer()
	now := time.Date(2026, 12, 6, 7, 0, 0, 0, time.UTC)
	sec, err := newEgressCA(gs, rand.Reader, now)
	if err != nil {
		t.Fatal(err)
	}
	if sec.Name != "team-a-gateway-egress-ca" || sec.Namespace != "agents" || sec.Type != corev1.SecretTypeTLS || sec.Immutable == nil || !*sec.Immutable {
		t.Errorf("secret = %s/%s type %s immutable %v", sec.Namespace, sec.Name, sec.Type, sec.Immutable)
	}
	checkOwned(t, sec.ObjectMeta, gatewayLabels(), true)
	if p := egressCAProblem(sec.Data["tls.crt"], sec.Data["tls.key"], now); p != "" {
		t.Fatalf("a fresh CA has a problem: %s", p)
	}
	block, _ := pem.Decode(sec.Data["tls.crt"])
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if !cert.IsCA || !cert.MaxPathLenZero || cert.MaxPathLen != 0 || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("CA constraints: IsCA %v MaxPathLen %d/%v usage %v", cert.IsCA, cert.MaxPathLen, cert.MaxPathLenZero, cert.KeyUsage)
	}
	if k, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok || k.Curve != elliptic.P256() {
		t.Errorf("public key = %T, want ECDSA P-256", cert.PublicKey)
	}
	if !strings.Contains(cert.Subject.CommonName, "agents/team-a") {
		t.Errorf("CN = %q, want it to name the GarraServer", cert.Subject.CommonName)
	}
	if got := cert.NotAfter.Sub(now); got < 9*365*24*time.Hour {
		t.Errorf("valid for %v", got)
	}
	if err := cert.CheckSignatureFrom(cert); err != nil {
		t.Errorf("not self-signed: %v", err)
	}
	again, err := newEgressCA(gs, rand.Reader, now)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(again.Data["tls.key"], sec.Data["tls.key"]) {
		t.Error("two CAs share a key")
	}
}

// The operator's verdict is config.ParseEgressCA's (its own table test
// covers every way a pair fails), put in the Secret's keys, plus the
// renewal window: a CA still valid but expiring soon is replaced too.
func TestEgressCAProblem(t *testing.T) {
	now := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	ca := func(change func(*x509.Certificate)) (crt, key []byte) {
		return egressdouble.CABetween(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC), change)
	}
	okCrt, okKey := ca(func(*x509.Certificate) {})
	leaf, leafKey := ca(func(c *x509.Certificate) { c.IsCA = false; c.KeyUsage = x509.KeyUsageDigitalSignature })
	soon, soonKey := ca(func(c *x509.Certificate) { c.NotAfter = now.Add(10 * 24 * time.Hour) })
	tests := []struct {
		name     string
		crt, key []byte
		want     string
	}{
		{"a CA and its key", okCrt, okKey, ""},
		{"the key at fault", nil, okKey, "tls.key: not the key of the CA certificate"},
		{"the certificate at fault", leaf, leafKey, "tls.crt: not a CA certificate"},
		{"expiring within the renewal window", soon, soonKey, "tls.crt: the CA expires at 2026-12-16"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := egressCAProblem(tc.crt, tc.key, now)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("problem = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRenderEgress(t *testing.T) {
	gs, ms := egressServer()
	c := RenderConfig(gs, ms)
	if want := (config.GatewayEgress{Listen: ":3128", CACertFile: "/var/run/garra/egress-ca/tls.crt", CAKeyFile: "/var/run/garra/egress-ca/tls.key"}); c.Gateway.Egress != want {
		t.Errorf("gateway.egress = %+v, want %+v", c.Gateway.Egress, want)
	}
	byName := map[string]config.Orchestrator{}
	for _, o := range c.Gateway.MCPHTTP.Orchestrators {
		byName[o.Name] = o
	}
	bg := byName["badgood"]
	if bg.Egress == nil || !slices.Equal(bg.Egress.Hosts, []string{"proxy.golang.org"}) {
		t.Errorf("badgood egress = %+v", bg.Egress)
	}
	wantGH := config.Credential{
		Name: "github", File: "/var/run/garra/tokens/cred.badgood.github",
		Hosts: []string{"github.com", "*.githubusercontent.com"}, Methods: []string{"GET", "POST"},
		Inject: config.CredentialInject{Scheme: "basic", Username: "x-access-token"},
	}
	if len(bg.Credentials) != 1 || !credEqual(bg.Credentials[0], wantGH) {
		t.Errorf("badgood credentials = %+v, want %+v", bg.Credentials, wantGH)
	}
	ci := byName["team/ci"]
	if ci.Egress == nil || len(ci.Egress.Hosts) != 0 {
		t.Errorf("team/ci egress = %+v: an egress block without hosts of its own", ci.Egress)
	}
	wantTk := config.Credential{
		Name: "tickets", File: "/var/run/garra/tokens/cred.team_ci.tickets", Hosts: []string{"tickets.example.com"},
		Inject: config.CredentialInject{Header: "X-Api-Key", Scheme: "none"},
	}
	if len(ci.Credentials) != 1 || !credEqual(ci.Credentials[0], wantTk) {
		t.Errorf("team/ci credentials = %+v", ci.Credentials)
	}
	if n8n := byName["n8n-prod"]; n8n.Egress != nil || n8n.Credentials != nil {
		t.Errorf("n8n-prod (egress internet) got %+v %+v", n8n.Egress, n8n.Credentials)
	}

	// Without a member going out through the gateway, no proxy at all.
	plain := testServer()
	if e := RenderConfig(plain, inlineMembers(plain)).Gateway.Egress; e != (config.GatewayEgress{}) {
		t.Errorf("gateway.egress without egress gateway = %+v", e)
	}
	y, err := RenderConfigYAML(plain, inlineMembers(plain))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(y, "egress") || strings.Contains(y, "credentials") {
		t.Errorf("config without egress gateway mentions it:\n%s", y)
	}

	// The rendered file names every file it reads, and the gateway pod
	// has each one.
	y, err = RenderConfigYAML(gs, ms)
	if err != nil {
		t.Fatal(err)
	}
	files := gatewayPodFiles(ms)
	for _, f := range []string{wantGH.File, wantTk.File, "/var/run/garra/egress-ca/tls.crt", "/var/run/garra/egress-ca/tls.key"} {
		if !strings.Contains(y, f) || !slices.Contains(files, f) {
			t.Errorf("%s: in config %v, in pod files %v", f, strings.Contains(y, f), slices.Contains(files, f))
		}
	}
}

func credEqual(a, b config.Credential) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

func TestCredentialsInTokensSecret(t *testing.T) {
	gs, ms := egressServer()
	values := map[string][]byte{
		"team-a-orch-badgood/sandbox-token": []byte("sbx-badgood"),
		"team-a-orch-badgood/token":         []byte("tok-badgood"),
		"gh/token":                          []byte("ghp_secretvalue\n"),
		"team/tickets/api-key":              []byte("tk-secret"),
	}
	now := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	data, ann, _ := tokensSecretData(gs, ms, nil, values, now)
	if got := string(data["cred.badgood.github"]); got != "ghp_secretvalue\n" {
		t.Errorf("cred.badgood.github = %q, want the source value as it is", got)
	}
	if got := string(data["cred.team_ci.tickets"]); got != "tk-secret" {
		t.Errorf("cred.team_ci.tickets = %q", got)
	}
	for k := range ann {
		if strings.Contains(k, "cred.") {
			t.Errorf("a credential has a rotation overlap: %s", k)
		}
	}

	// Rotated: the new value at once, no overlap.
	live := &corev1.Secret{Data: data, Type: corev1.SecretTypeOpaque}
	values["gh/token"] = []byte("ghp_rotated")
	data2, _, _ := tokensSecretData(gs, ms, live, values, now.Add(time.Second))
	if got := string(data2["cred.badgood.github"]); got != "ghp_rotated" {
		t.Errorf("after rotation = %q", got)
	}

	// Source missing: the key stays, empty (that credential alone fails).
	delete(values, "team/tickets/api-key")
	data3, _, _ := tokensSecretData(gs, ms, live, values, now)
	if v, ok := data3["cred.team_ci.tickets"]; !ok || len(v) != 0 {
		t.Errorf("missing source: %q present %v", v, ok)
	}

	// Removed from the spec: the key goes.
	ms[0].Credentials = nil
	data4, _, _ := tokensSecretData(gs, ms, live, values, now)
	if _, ok := data4["cred.badgood.github"]; ok {
		t.Error("a removed credential keeps its key")
	}
}

// The sandbox gets the proxy's address and the CA's certificate, and
// nothing that holds a credential: no Secret but its own, no variable from
// a Secret, and its own Secret holds only its token lines and the CA.
func TestSandboxEgressWiring(t *testing.T) {
	gs, ms := egressServer()
	ca := []byte("-----BEGIN CERTIFICATE-----\nCA\n-----END CERTIFICATE-----\n")
	for _, m := range ms {
		dep := typed[appsv1.Deployment](t, sandboxDeployment(gs, m, sandboxImages{Sandbox: "sbx:1"}, ca))
		pod := dep.Spec.Template.Spec
		env := envFrom(pod.Containers[0])
		if !egressGateway(m) {
			if _, ok := env[EnvEgressProxy]; ok {
				t.Errorf("%s: egress %s gets the proxy", m.ID, m.Sandbox.Egress)
			}
			if dep.Spec.Template.Annotations[AnnotationInputsHash] != "" {
				t.Errorf("%s: a template hash without egress gateway", m.ID)
			}
			continue
		}
		if env[EnvEgressProxy] != "=http://team-a-gateway.agents.svc:3128" || env[EnvEgressCAFile] != "=/var/run/garra/egress-ca.crt" {
			t.Errorf("%s: env = %v", m.ID, env)
		}
		for k, v := range env {
			if !strings.HasPrefix(v, "=") {
				t.Errorf("%s: %s comes from %s", m.ID, k, v)
			}
		}
		var items []string
		for _, v := range pod.Volumes {
			if v.Secret != nil {
				t.Errorf("%s: secret volume %s", m.ID, v.Name)
			}
			if v.Projected == nil {
				continue
			}
			for _, src := range v.Projected.Sources {
				if src.Secret == nil {
					continue
				}
				if src.Secret.Name != m.sandboxTokenName() {
					t.Errorf("%s: projects Secret %s", m.ID, src.Secret.Name)
				}
				for _, it := range src.Secret.Items {
					items = append(items, it.Key+"->"+it.Path)
				}
			}
		}
		if !slices.Equal(items, []string{"sandbox-token->sandbox-token", "egress-ca.crt->egress-ca.crt"}) {
			t.Errorf("%s: projected items = %v", m.ID, items)
		}
		if h := dep.Spec.Template.Annotations[AnnotationInputsHash]; h != egressCAHash(ca) || h == "" {
			t.Errorf("%s: template hash = %q, want the CA's", m.ID, h)
		}
		data := sandboxSecretData(m, []byte("lines"), ca)
		if len(data) != 2 || string(data[KeyEgressCA]) != string(ca) || string(data[KeySandboxToken]) != "lines" {
			t.Errorf("%s: own Secret = %v", m.ID, data)
		}
	}
	plain := inlineMember(gs, gs.Spec.Orchestrators[1])
	if data := sandboxSecretData(plain, []byte("lines"), ca); len(data) != 1 {
		t.Errorf("egress internet: own Secret = %v", data)
	}
}

func TestGatewayEgressWiring(t *testing.T) {
	gs, ms := egressServer()
	dep := typed[appsv1.Deployment](t, gatewayDeployment(gs, anyEgressGateway(ms), "garra:1", "h"))
	c := dep.Spec.Template.Spec.Containers[0]
	var ports []string
	for _, p := range c.Ports {
		ports = append(ports, p.Name)
		if p.Name == "egress" && (p.ContainerPort != 3128 || p.Protocol != corev1.ProtocolTCP) {
			t.Errorf("egress port = %+v", p)
		}
	}
	if !slices.Equal(ports, []string{"mcp", "egress"}) {
		t.Errorf("ports = %v", ports)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m
	}
	if m := mounts["egress-ca"]; m.MountPath != "/var/run/garra/egress-ca" || !m.ReadOnly {
		t.Errorf("egress-ca mount = %+v", m)
	}
	var vol *corev1.Volume
	for i, v := range dep.Spec.Template.Spec.Volumes {
		if v.Name == "egress-ca" {
			vol = &dep.Spec.Template.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.Secret == nil || vol.Secret.SecretName != "team-a-gateway-egress-ca" || len(vol.Secret.Items) != 2 ||
		*vol.Secret.DefaultMode != SecretFileMode {
		t.Fatalf("egress-ca volume = %+v", vol)
	}
	if _, ok := envFrom(c)[EnvSSLCertDir]; ok {
		t.Error("SSL_CERT_DIR without a trusted CA")
	}

	svc := typed[corev1.Service](t, gatewayService(gs, ms))
	if len(svc.Spec.Ports) != 2 || svc.Spec.Ports[1].Name != "egress" || svc.Spec.Ports[1].Port != 3128 || svc.Spec.Ports[1].TargetPort.StrVal != "egress" {
		t.Errorf("service ports = %+v", svc.Spec.Ports)
	}

	// A private upstream CA: a file of its own, added to Go's directories.
	gs.Spec.Gateway.Egress = &garrav1alpha1.GatewayEgressSpec{TrustedCASecretRef: &garrav1alpha1.SecretKeySelector{Name: "corp-ca", Key: "ca.pem"}}
	c = typed[appsv1.Deployment](t, gatewayDeployment(gs, anyEgressGateway(ms), "garra:1", "h")).Spec.Template.Spec.Containers[0]
	if got := envFrom(c)[EnvSSLCertDir]; got != "=/etc/ssl/certs:/etc/pki/tls/certs:/var/run/garra/egress-trust" {
		t.Errorf("SSL_CERT_DIR = %q", got)
	}
	refs := gatewayPodRefs(gs, ms)
	if !slices.ContainsFunc(refs, func(r secretRef) bool { return r.String() == "corp-ca/ca.pem" }) ||
		!slices.ContainsFunc(refs, func(r secretRef) bool { return r.String() == "team-a-gateway-egress-ca/tls.crt" }) {
		t.Errorf("pod refs = %v: the CAs are read at start", refs)
	}

	// No member going out through the gateway: the pod and Service it had.
	plain := testServer()
	pd := typed[appsv1.Deployment](t, gatewayDeployment(plain, anyEgressGateway(inlineMembers(plain)), "garra:1", "h"))
	for _, v := range pd.Spec.Template.Spec.Volumes {
		if strings.HasPrefix(v.Name, "egress") {
			t.Errorf("volume %s without egress gateway", v.Name)
		}
	}
	if n := len(pd.Spec.Template.Spec.Containers[0].Ports); n != 1 {
		t.Errorf("%d ports without egress gateway", n)
	}
	if n := len(typed[corev1.Service](t, gatewayService(plain, inlineMembers(plain))).Spec.Ports); n != 1 {
		t.Errorf("%d service ports without egress gateway", n)
	}
}

// A credential's Secret is read (and watched) in its orchestrator's own
// namespace, and never rolls a pod.
func TestCredentialRefs(t *testing.T) {
	gs, ms := egressServer()
	got := []string{}
	for _, m := range ms {
		for _, r := range credentialRefs(m) {
			got = append(got, r.valueKey()+" "+r.Field)
		}
	}
	want := []string{"gh/token spec.orchestrators[badgood].credentials[0].secretRef", "team/tickets/api-key spec.credentials[0].secretRef"}
	if !slices.Equal(got, want) {
		t.Errorf("refs = %v, want %v", got, want)
	}
	if !slices.Contains(ReferencedSecretNames(gs), "gh") {
		t.Errorf("index %v lacks the credential's Secret", ReferencedSecretNames(gs))
	}
	ob := &garrav1alpha1.Orchestrator{}
	ob.Spec.TokenSecretRef = &garrav1alpha1.SecretKeySelector{Name: "tok", Key: "t"}
	ob.Spec.Credentials = []garrav1alpha1.CredentialSpec{githubCredential(), githubCredential()}
	if got := orchestratorSecretRefs(ob); !slices.Equal(got, []string{"tok", "gh"}) {
		t.Errorf("orchestrator index = %v", got)
	}
	for _, r := range gatewayPodRefs(gs, ms) {
		if r.Secret == "gh" || r.Secret == "tickets" {
			t.Errorf("credential %s is a gateway pod input: a rotation would restart it", r)
		}
	}
}

// A credential Secret the Orchestrator's namespace lacks makes it not
// Ready, naming the field and the namespace rule; the message holds no
// value (it has none to hold).
func TestOrchestratorStatusMissingCredential(t *testing.T) {
	gs, ms := egressServer()
	gs.Spec.AllowedOrchestrators = &garrav1alpha1.AllowedOrchestrators{Namespaces: &garrav1alpha1.OrchestratorNamespaces{From: garrav1alpha1.NamespacesFromAll}}
	ob := &garrav1alpha1.Orchestrator{ObjectMeta: metav1.ObjectMeta{Name: "ci", Namespace: "team", Generation: 2}}
	ob.Spec.OrchestratorSettings = ms[2].OrchestratorSettings
	att := attachment{accepted: true, reason: garrav1alpha1.ReasonAccepted}
	ready := &appsv1.Deployment{}
	ready.Status.AvailableReplicas = 1
	st := orchestratorStatus(gs, ob, att, ready, credentialRefs(ms[2]), reportView{})
	c := meta.FindStatusCondition(st.Conditions, garrav1alpha1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != garrav1alpha1.ReasonSecretMissing ||
		!strings.Contains(c.Message, "not found in namespace team: spec.credentials[0].secretRef: Secret tickets key api-key") ||
		!strings.Contains(c.Message, "own namespace") {
		t.Errorf("Ready = %+v", c)
	}
	st = orchestratorStatus(gs, ob, att, ready, nil, reportView{})
	if c := meta.FindStatusCondition(st.Conditions, garrav1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("without a missing Secret: Ready = %+v", c)
	}

	// Its tokenSecretRef's Secret missing: the same, naming that field.
	ob.Spec.TokenSecretRef = &garrav1alpha1.SecretKeySelector{Name: "ci-token", Key: "token"}
	m := attachedMember(gs, ob)
	refs := namedSecretRefs(m)
	if len(refs) != 2 || refs[0].Field != "spec.tokenSecretRef" || refs[1].Field != "spec.credentials[0].secretRef" {
		t.Fatalf("named refs = %+v", refs)
	}
	st = orchestratorStatus(gs, ob, att, ready, refs[:1], reportView{})
	c = meta.FindStatusCondition(st.Conditions, garrav1alpha1.ConditionReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != garrav1alpha1.ReasonSecretMissing ||
		!strings.Contains(c.Message, "not found in namespace team: spec.tokenSecretRef: Secret ci-token key token") ||
		!strings.Contains(c.Message, "accepts no token for this orchestrator") {
		t.Errorf("token missing: Ready = %+v", c)
	}
}

// The rendered egress config passes the gateway's own config check with
// the files the pod mounts, and each of those files is needed: one left
// out is a problem naming its field.
func TestRenderedEgressPassesConfigCheck(t *testing.T) {
	gs, ms := egressServer()
	yml, err := RenderConfigYAML(gs, ms)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := config.Parse([]byte(yml)); err != nil {
		t.Fatalf("config.Parse: %v\n%s", err, yml)
	}
	files := gatewayPodFiles(ms)
	problems, err := configWarnings(yml, gatewayPodEnv(gs), files)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Fatalf("config check problems: %v\n%s", problems, yml)
	}
	for _, f := range []string{EgressCACertFile(), EgressCAKeyFile(), CredentialFile("cred.badgood.github"), CredentialFile("cred.team_ci.tickets")} {
		less := slices.DeleteFunc(slices.Clone(files), func(x string) bool { return x == f })
		problems, err := configWarnings(yml, gatewayPodEnv(gs), less)
		if err != nil {
			t.Fatal(err)
		}
		if len(problems) != 1 || !strings.Contains(problems[0].Message, f+" is not mounted") {
			t.Errorf("without %s: problems %v", f, problems)
		}
	}
}
