package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	appsv1 "k8s.io/api/apps/v1"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

func TestConfigHash(t *testing.T) {
	sum := sha256.Sum256([]byte("a: 1\n"))
	if got, want := ConfigHash("a: 1\n"), "sha256:"+hex.EncodeToString(sum[:]); got != want {
		t.Errorf("ConfigHash = %s, want %s", got, want)
	}
	if got := GatewayReadyzURL(testServer()); got != "http://team-a-gateway.agents.svc:3888/readyz" {
		t.Errorf("GatewayReadyzURL = %s", got)
	}
}

func TestConfigApplied(t *testing.T) {
	tests := []struct {
		name                 string
		got, rejected        string
		err                  error
		status               metav1.ConditionStatus
		reason, msgSubstring string
	}{
		{"same hash", "sha256:a", "", nil, metav1.ConditionTrue, "Applied", "runs config sha256:a"},
		{"same hash, an older reload refused", "sha256:a", "x: bad", nil, metav1.ConditionTrue, "Applied", "runs config sha256:a"},
		{"another hash", "sha256:b", "", nil, metav1.ConditionFalse, "Pending", "runs config sha256:b, not yet sha256:a"},
		{"no hash yet", "", "", nil, metav1.ConditionFalse, "Pending", "(none reported), not yet sha256:a"},
		{"refused", "sha256:b", "gateway.mcp_http.orchestrators[2].key_file: missing\nsecond line", nil, metav1.ConditionFalse, "Rejected",
			"refused config sha256:a and keeps serving sha256:b: gateway.mcp_http.orchestrators[2].key_file: missing second line"},
		{"unreachable", "", "", errors.New("dial tcp: refused"), metav1.ConditionFalse, "Pending", "could not be asked which config it runs: dial tcp: refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, reason, msg := configApplied("sha256:a", tc.got, tc.rejected, tc.err)
			if status != tc.status || reason != tc.reason || !strings.Contains(msg, tc.msgSubstring) {
				t.Errorf("configApplied = %s %s %q, want %s %s containing %q", status, reason, msg, tc.status, tc.reason, tc.msgSubstring)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("message %q spans lines", msg)
			}
		})
	}
	_, _, msg := configApplied("sha256:a", "", strings.Repeat("x", 2000), nil)
	if len(msg) > maxProblemLen+200 {
		t.Errorf("a long problem is not bounded: %d bytes", len(msg))
	}
}

// TestHTTPGatewayProbe asks a loopback gateway stand-in, as the manager
// asks a real one: the headers are read whatever the status.
func TestHTTPGatewayProbe(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.Header().Set(HeaderConfigHash, "sha256:abc")
		w.Header().Set(HeaderConfigRejected, "bad line")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	probe := HTTPGatewayProbe(srv.Client())
	hash, rejected, err := probe(context.Background(), srv.URL+"/readyz")
	if err != nil || hash != "sha256:abc" || rejected != "bad line" {
		t.Errorf("probe = %q %q %v", hash, rejected, err)
	}
	srv.Close()
	if _, _, err := probe(context.Background(), srv.URL+"/readyz"); err == nil || !strings.Contains(err.Error(), "probe http://127.0.0.1") {
		t.Errorf("closed server: err = %v, want one naming the URL", err)
	}
}

func TestProbeConfig(t *testing.T) {
	gs := testServer()
	r := &GarraServerReconciler{}
	up := dep(1)
	if c := r.probeConfig(context.Background(), gs, up, "sha256:a"); c.Status != metav1.ConditionUnknown || c.Reason != "NotProbed" {
		t.Errorf("no probe: %+v", c)
	}
	var asked string
	r.Probe = func(_ context.Context, url string) (string, string, error) {
		asked = url
		return "sha256:a", "", nil
	}
	for _, d := range []*appsv1.Deployment{nil, dep(0)} {
		if c := r.probeConfig(context.Background(), gs, d, "sha256:a"); c.Reason != "Pending" || asked != "" {
			t.Errorf("gateway %+v without a replica: %+v, asked %q (a Service without an endpoint is not asked)", d, c, asked)
		}
	}
	if c := r.probeConfig(context.Background(), gs, up, "sha256:a"); c.Status != metav1.ConditionTrue || asked != "http://team-a-gateway.agents.svc:3888/readyz" {
		t.Errorf("probe: %+v, asked %s", c, asked)
	}
	r.ProbeURL = func(*garrav1alpha1.GarraServer) string { return "http://127.0.0.1:1/x" }
	r.probeConfig(context.Background(), gs, up, "sha256:a")
	if asked != "http://127.0.0.1:1/x" {
		t.Errorf("ProbeURL not used: asked %s", asked)
	}
}
