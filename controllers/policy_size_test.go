package controllers

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// The API server's limits on what the gateway is handed: a ConfigMap's or
// Secret's data at most 1 MiB, an object's annotations at most 256 KiB
// (the rotation expiries live there).
const (
	maxObjectData      = 1 << 20
	maxAnnotationBytes = 256 << 10
)

// policyObjects are the rendered config.yml, the tokens Secret's data and
// annotations, and that Secret as JSON (base64 data; what etcd stores), for
// n attached Orchestrators in 50 namespaces with names longer than most,
// every one with tools, a chat, a quota and an idle-suspended sandbox.
// rotating makes every key hold the most lines it can (the current token
// and two previous ones in grace), the worst case.
type policyObjects struct {
	configYAML       int
	secretData       int
	secretAnnotation int
	secretJSON       int
}

func renderPolicyObjects(tb testing.TB, n int, rotating bool) policyObjects {
	tb.Helper()
	gs := testServer()
	gs.Spec.Orchestrators = nil
	ms := make([]member, 0, n)
	for i := range n {
		ob := &garrav1alpha1.Orchestrator{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("orchestrator-%04d", i), Namespace: fmt.Sprintf("platform-team-%02d", i%50),
				UID: types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", i))},
			Spec: garrav1alpha1.AttachedOrchestratorSpec{OrchestratorSettings: garrav1alpha1.OrchestratorSettings{
				Tools:   []garrav1alpha1.Tool{garrav1alpha1.ToolStatus, garrav1alpha1.ToolAgent, garrav1alpha1.ToolListChats, garrav1alpha1.ToolSendMessage},
				Chats:   []string{fmt.Sprintf("telegram:%d", 100000+i)},
				Quota:   &garrav1alpha1.QuotaSpec{AskPerMinute: ptrTo(int32(10)), AgentPerMinute: ptrTo(int32(2)), AgentConcurrent: ptrTo(int32(1))},
				Sandbox: garrav1alpha1.SandboxSpec{Egress: garrav1alpha1.EgressNone, IdleTimeout: &metav1.Duration{Duration: 30 * time.Minute}},
			}},
		}
		ms = append(ms, attachedMember(gs, ob))
	}
	cfg, err := RenderConfigYAML(gs, ms)
	if err != nil {
		tb.Fatal(err)
	}
	gen := 0
	values := func() map[string][]byte {
		gen++
		v := map[string][]byte{}
		for i, m := range ms {
			// A generated credential's length: 32 bytes, base64url.
			tok := func(kind string) []byte {
				return fmt.Appendf(nil, "%s%d-%04d-%s", kind, gen, i, strings.Repeat("x", 43-len(kind)-7))
			}
			v[orchTokenRef(m).valueKey()] = tok("c")
			v[sandboxTokenRef(m).valueKey()] = tok("s")
		}
		return v
	}
	now := time.Date(2026, 12, 6, 8, 0, 0, 0, time.UTC)
	data, ann, _ := tokensSecretData(gs, ms, nil, values(), now)
	if rotating {
		for range 2 {
			live := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Annotations: ann}, Data: data}
			now = now.Add(time.Minute)
			data, ann, _ = tokensSecretData(gs, ms, live, values(), now)
		}
	}
	o := policyObjects{configYAML: len(cfg)}
	for _, v := range data {
		o.secretData += len(v)
	}
	for k, v := range ann {
		o.secretAnnotation += len(k) + len(v)
	}
	if len(ann) == 0 && rotating {
		tb.Fatal("no rotation annotations while rotating")
	}
	if rotating && !strings.Contains(string(data[ms[0].tokenKey()]), "\n") {
		tb.Fatal("a rotating key holds one line")
	}
	raw, err := json.Marshal(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: tokensName(gs), Namespace: gs.Namespace, Annotations: ann}, Data: data})
	if err != nil {
		tb.Fatal(err)
	}
	o.secretJSON = len(raw)
	return o
}

// At 1,000 attached Orchestrators the gateway's ConfigMap and tokens
// Secret each fit in one object, rotating or not, with room to spare:
// the sizes and the margin are printed (go test -v -run
// TestPolicyObjectSizes ./controllers/).
func TestPolicyObjectSizes(t *testing.T) {
	for _, n := range []int{10, 1000} {
		for _, rotating := range []bool{false, true} {
			o := renderPolicyObjects(t, n, rotating)
			t.Logf("%4d orchestrators, rotating %-5t: config.yml %7d B (%4.1f%% of 1 MiB, %d B each); tokens data %7d B (%4.1f%%, %d B each), annotations %6d B (%4.1f%% of 256 KiB), Secret as JSON %7d B",
				n, rotating, o.configYAML, 100*float64(o.configYAML)/maxObjectData, o.configYAML/n,
				o.secretData, 100*float64(o.secretData)/maxObjectData, o.secretData/n,
				o.secretAnnotation, 100*float64(o.secretAnnotation)/maxAnnotationBytes, o.secretJSON)
			if n == 1000 {
				// Budgets below the limits: a platform's names and settings
				// may be longer than these and still fit.
				if o.configYAML > maxObjectData*3/4 || o.secretData > maxObjectData/2 ||
					o.secretAnnotation > maxAnnotationBytes*3/4 || o.secretJSON > maxObjectData {
					t.Errorf("at %d orchestrators (rotating %t) an object is past its budget: %+v", n, rotating, o)
				}
				t.Logf("  config.yml reaches 1 MiB at about %d such orchestrators", maxObjectData/(o.configYAML/n))
			}
		}
	}
}

// BenchmarkPolicyObjectSizes prints the sizes of TestPolicyObjectSizes as
// metrics, for 10 and 1,000 orchestrators side by side (worst case: every
// token in its rotation grace).
func BenchmarkPolicyObjectSizes(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("orchestrators=%d", n), func(b *testing.B) {
			var o policyObjects
			for b.Loop() {
				o = renderPolicyObjects(b, n, true)
			}
			b.ReportMetric(float64(o.configYAML), "config-B")
			b.ReportMetric(float64(o.configYAML)/float64(n), "config-B/orch")
			b.ReportMetric(float64(o.secretData), "tokens-B")
			b.ReportMetric(float64(o.secretAnnotation), "annotations-B")
			b.ReportMetric(float64(o.secretJSON), "secret-json-B")
		})
	}
}
