package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/controllers"
	"github.com/garraia/garra/internal/gateway"
	"github.com/garraia/garra/internal/kube"
	"github.com/garraia/garra/test/kubetest"
)

// Tokens of the policy watch test: the caller tokens of three
// orchestrators, alpha's before and after a rotation.
const (
	alphaOld = "alpha-token-old-0123456789abcdef0123"
	alphaNew = "alpha-token-new-0123456789abcdef0123"
	betaTok  = "beta-token-12345678-0123456789abcdef"
	gammaTok = "gamma-token-1234567-0123456789abcdef"
	deltaTok = "delta-token-1234567-0123456789abcdef"
)

// The gateway learns its policy from its ConfigMap and tokens Secret as
// the API server serves them, under the Role the operator renders for it:
// a new orchestrator and a rotated token apply with no file changed, the
// Role lets it read those two objects and nothing else, and with the API
// server gone it serves on from its files and still reloads them.
func TestPolicyWatchAgainstAPIServer(t *testing.T) {
	srv := kubetest.StartServer(t)
	admin := kubernetes.NewForConfigOrDie(srv.Config)
	ctx := context.Background()
	const ns = "garra"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The Role and binding exactly as the operator renders them for a
	// GarraServer team-a (no garbage collector runs here to follow the
	// owner reference).
	gs := &garrav1alpha1.GarraServer{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: ns, UID: types.UID("0b8f6a3e-1111-4222-8333-944455556666")}}
	apply := metav1.ApplyOptions{FieldManager: "test", Force: true}
	if _, err := admin.RbacV1().Roles(ns).Apply(ctx, controllers.GatewayPolicyRole(gs), apply); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings(ns).Apply(ctx, controllers.GatewayPolicyRoleBinding(gs), apply); err != nil {
		t.Fatal(err)
	}
	// The gateway's own identity: its ServiceAccount, by impersonation.
	asGateway := rest.CopyConfig(srv.Config)
	asGateway.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":team-a-gateway"}

	l := newLive(t, nil)
	head := "gateway:\n  api_key: " + ownerKey + "\n  mcp_http:\n    enabled: true\n"
	tail := "llm: {provider: ollama, model: llama3.2}\n"
	configOf := func(names ...string) string { return head + l.orchestratorsYAML("[status]", names...) + tail }
	// The files as the kubelet would have mounted them at start.
	l.writeToken("alpha", alphaOld+"\n")
	l.writeConfig(configOf("alpha"))
	cms, secrets := admin.CoreV1().ConfigMaps(ns), admin.CoreV1().Secrets(ns)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "team-a-gateway"},
		Data: map[string]string{"config.yml": configOf("alpha")}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sec, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "team-a-gateway-tokens"},
		Data: map[string][]byte{"alpha": []byte(alphaOld)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "someone-else"},
		Data: map[string][]byte{"k": []byte("v")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	c, err := kube.New(asGateway, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	l.run(func(o *gateway.Options) {
		o.PolicyWatch = &gateway.PolicyWatch{Client: c, Namespace: ns, ConfigMap: "team-a-gateway", Secret: "team-a-gateway-tokens",
			SecretDir: l.tokens, Options: kube.WatchOptions{BackoffFloor: 50 * time.Millisecond, BackoffCeiling: 200 * time.Millisecond}}
	})
	// status answers the caller; the body is the tool list.
	status := func(token string) int {
		code, _ := post(t, l.url, token, toolsList, nil)
		return code
	}
	// within waits for status(token) to be want and says how long it took.
	within := func(what, token string, want int, bound time.Duration) time.Duration {
		t.Helper()
		start := time.Now()
		for status(token) != want {
			if time.Since(start) > bound {
				t.Fatalf("%s: still %d after %s, want %d; logs:\n%s", what, status(token), bound, want, l.logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		d := time.Since(start)
		t.Logf("%s: %s", what, d.Round(time.Millisecond))
		return d
	}
	within("the watch goes live", alphaOld, http.StatusOK, 5*time.Second)
	// The two objects' watches go live independently: wait for both.
	deadline := time.Now().Add(5 * time.Second)
	for {
		m := metricsText(t, l.url)
		if strings.Contains(m, `garra_policy_watch_live{object="configmap"} 1`) && strings.Contains(m, `garra_policy_watch_live{object="secret"} 1`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics: both watches never went live:\n%s\nlogs:\n%s", grep(m, "garra_policy_watch"), l.logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}

	t.Run("a new orchestrator is callable with no file changed", func(t *testing.T) {
		if got := status(betaTok); got != http.StatusUnauthorized {
			t.Fatalf("beta before it exists: %d", got)
		}
		// As the operator writes: the tokens Secret, then the ConfigMap.
		sec.Data["beta"] = []byte(betaTok)
		if sec, err = secrets.Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		cm.Data["config.yml"] = configOf("alpha", "beta")
		if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		within("beta callable after the ConfigMap's update", betaTok, http.StatusOK, 5*time.Second)
	})

	t.Run("a rotated token: the new one accepted, the old one during its grace only", func(t *testing.T) {
		// The operator's format: the current token first, the previous
		// one on the next line until the grace ends.
		sec.Data["alpha"] = []byte(alphaNew + "\n" + alphaOld)
		if sec, err = secrets.Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		within("the new token accepted", alphaNew, http.StatusOK, 5*time.Second)
		if got := status(alphaOld); got != http.StatusOK {
			t.Fatalf("the old token during its grace: %d", got)
		}
		sec.Data["alpha"] = []byte(alphaNew)
		if sec, err = secrets.Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		within("the old token refused once its grace ended", alphaOld, http.StatusUnauthorized, 5*time.Second)
		if got := status(alphaNew); got != http.StatusOK {
			t.Fatalf("the new token after the grace: %d", got)
		}
	})

	t.Run("a bad policy through the watch is refused, and every caller keeps the last good one", func(t *testing.T) {
		good := configOf("alpha", "beta")
		resp, _ := readyz(t, l.url, false)
		goodHash := resp.Header.Get(gateway.HeaderConfigHash)
		if goodHash != hashOf([]byte(good)) {
			t.Fatalf("the hash in force before the bad policy: %q, want the watched config's", goodHash)
		}
		// delta arrives with a config that fails the check: neither is applied.
		sec.Data["delta"] = []byte(deltaTok)
		if sec, err = secrets.Update(ctx, sec, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		bad := strings.Replace(configOf("alpha", "beta", "delta"), "    enabled: true\n", "    enabled: true\n    agent_max_seconds: 4\n", 1)
		cm.Data["config.yml"] = bad
		if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for {
			resp, _ := readyz(t, l.url, false)
			if strings.HasPrefix(resp.Header.Get(gateway.HeaderConfigRejected), "gateway.mcp_http.agent_max_seconds: 4 is outside") {
				if got := resp.Header.Get(gateway.HeaderConfigHash); got != goodHash {
					t.Fatalf("the hash in force after the rejection: %q, want the last good %q", got, goodHash)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the bad policy was never reported rejected: %v; logs:\n%s", resp.Header, l.logs.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
		for tok, want := range map[string]int{alphaNew: http.StatusOK, betaTok: http.StatusOK, deltaTok: http.StatusUnauthorized} {
			if got := status(tok); got != want {
				t.Errorf("%.5s… under the last good policy: %d, want %d", tok, got, want)
			}
		}
		// The fix arrives the same way and applies at once.
		cm.Data["config.yml"] = configOf("alpha", "beta", "delta")
		if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		within("delta callable once the policy is fixed", deltaTok, http.StatusOK, 5*time.Second)
		if resp, _ := readyz(t, l.url, false); resp.Header.Get(gateway.HeaderConfigRejected) != "" {
			t.Fatalf("still reported rejected after the fix: %v", resp.Header)
		}
	})

	t.Run("the Role lets the gateway read its two objects and nothing else", func(t *testing.T) {
		gw := kubernetes.NewForConfigOrDie(asGateway)
		own := metav1.ListOptions{FieldSelector: "metadata.name=team-a-gateway-tokens"}
		if _, err := gw.CoreV1().Secrets(ns).List(ctx, own); err != nil {
			t.Fatalf("list of its own Secret by name: %v", err)
		}
		if _, err := gw.CoreV1().ConfigMaps(ns).Get(ctx, "team-a-gateway", metav1.GetOptions{}); err != nil {
			t.Fatalf("get of its own ConfigMap: %v", err)
		}
		for what, err := range map[string]error{
			"get of another Secret": func() error {
				_, err := gw.CoreV1().Secrets(ns).Get(ctx, "someone-else", metav1.GetOptions{})
				return err
			}(),
			"list of Secrets without the field selector": func() error {
				_, err := gw.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
				return err
			}(),
			"watch of Secrets without the field selector": func() error {
				w, err := gw.CoreV1().Secrets(ns).Watch(ctx, metav1.ListOptions{})
				if err == nil {
					w.Stop()
				}
				return err
			}(),
			"list of another ConfigMap by name": func() error {
				_, err := gw.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{FieldSelector: "metadata.name=other"})
				return err
			}(),
			"an update of its own Secret": func() error {
				s, err := admin.CoreV1().Secrets(ns).Get(ctx, "team-a-gateway-tokens", metav1.GetOptions{})
				if err != nil {
					return err
				}
				_, err = gw.CoreV1().Secrets(ns).Update(ctx, s, metav1.UpdateOptions{})
				return err
			}(),
			"its Secret in another namespace": func() error {
				_, err := gw.CoreV1().Secrets("default").Get(ctx, "team-a-gateway-tokens", metav1.GetOptions{})
				return err
			}(),
		} {
			if !apierrors.IsForbidden(err) {
				t.Errorf("%s: %v, want Forbidden", what, err)
			}
		}
	})

	t.Run("with the API server gone it keeps the last watched policy until its files change", func(t *testing.T) {
		// The kubelet's copy, a sync behind the objects: alpha's rotation
		// is in, beta is not yet.
		l.writeToken("alpha", alphaNew+"\n")
		l.writeConfig(configOf("alpha"))
		srv.Stop()
		deadline := time.Now().Add(30 * time.Second)
		// Both watches, the ConfigMap's and the Secret's.
		for strings.Count(l.logs.String(), "policy watch lost") < 2 {
			if time.Now().After(deadline) {
				t.Fatalf("the lost watch was never noticed; logs:\n%s", l.logs.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if m := metricsText(t, l.url); !strings.Contains(m, `garra_policy_watch_live{object="configmap"} 0`) ||
			!strings.Contains(m, `garra_policy_watch_live{object="secret"} 0`) {
			t.Fatalf("metrics with the watch lost:\n%s", grep(m, "garra_policy_watch"))
		}
		// What the watch delivered stands: beta, whom the files do not
		// know yet, is not undone by the outage.
		for _, tok := range []string{alphaNew, betaTok} {
			if got := status(tok); got != http.StatusOK {
				t.Fatalf("a caller the watch delivered, with the API server gone: %d; logs:\n%s", got, l.logs.String())
			}
		}
		if got := status(alphaOld); got != http.StatusUnauthorized {
			t.Fatalf("the retired token with the API server gone: %d", got)
		}
		// The kubelet catches up, and goes further: the files are the
		// source again.
		l.writeToken("beta", betaTok+"\n")
		l.writeToken("gamma", gammaTok+"\n")
		l.writeConfig(configOf("alpha", "beta", "gamma"))
		within("gamma callable after a file change, the API server gone", gammaTok, http.StatusOK, 10*time.Second)
		for _, tok := range []string{alphaNew, betaTok} {
			if got := status(tok); got != http.StatusOK {
				t.Fatalf("a caller once the files are the source: %d", got)
			}
		}
		for _, line := range []string{"the mounted config file changed", "the mounted token files changed"} {
			if !strings.Contains(l.logs.String(), line) {
				t.Errorf("no %q in the logs", line)
			}
		}
	})
}
