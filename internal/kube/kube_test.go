package kube_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/garraia/garra/internal/kube"
	"github.com/garraia/garra/test/kubetest"
)

// Every call garra makes, against a real API server: the version probe,
// a TokenReview of a real ServiceAccount token (and of a forged one), and
// the sandbox wake's merge patch, including the availability it reports
// and the refusals it passes on.
func TestAgainstAPIServer(t *testing.T) {
	rc := kubetest.Start(t)
	admin := kubernetes.NewForConfigOrDie(rc)
	c, err := kube.New(rc, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	t.Run("version", func(t *testing.T) {
		v, err := c.Version(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if v.Major == "" || v.GitVersion == "" {
			t.Fatalf("version answer without a version: %+v", v)
		}
	})

	t.Run("token review", func(t *testing.T) {
		if _, err := admin.CoreV1().ServiceAccounts("default").Create(ctx,
			&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "orch"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tok, err := admin.CoreV1().ServiceAccounts("default").CreateToken(ctx, "orch", &authv1.TokenRequest{
			Spec: authv1.TokenRequestSpec{Audiences: []string{"garra-test"}, ExpirationSeconds: ptr.To[int64](600)},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			name, token   string
			authenticated bool
		}{
			{"issued", tok.Status.Token, true},
			{"forged", tok.Status.Token[:len(tok.Status.Token)-4] + "AAAA", false},
		} {
			got, err := c.TokenReviews().Create(ctx, &authv1.TokenReview{Spec: authv1.TokenReviewSpec{
				Token: tc.token, Audiences: []string{"garra-test"},
			}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if got.Status.Authenticated != tc.authenticated {
				t.Fatalf("%s: authenticated = %v, want %v (%s)", tc.name, got.Status.Authenticated, tc.authenticated, got.Status.Error)
			}
			if tc.authenticated && got.Status.User.Username != "system:serviceaccount:default:orch" {
				t.Fatalf("%s: user %q", tc.name, got.Status.User.Username)
			}
		}
	})

	t.Run("deployment merge patch", func(t *testing.T) {
		lbl := map[string]string{"app": "sandbox"}
		dep := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: "sandbox", Namespace: "default"},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To[int32](0),
				Selector: &metav1.LabelSelector{MatchLabels: lbl},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: lbl},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "sandbox:test"}}},
				},
			},
		}
		if _, err := admin.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		patch, _ := json.Marshal(map[string]any{
			"metadata": map[string]any{"annotations": map[string]string{"example.test/mark": "1"}},
			"spec":     map[string]any{"replicas": 1},
		})
		got, err := c.MergePatchDeployment(ctx, "default", "sandbox", patch, "garra-test")
		if err != nil {
			t.Fatal(err)
		}
		if *got.Spec.Replicas != 1 || got.Annotations["example.test/mark"] != "1" || got.Status.AvailableReplicas != 0 {
			t.Fatalf("patched: replicas %d, annotations %v, available %d", *got.Spec.Replicas, got.Annotations, got.Status.AvailableReplicas)
		}
		managers := map[string]bool{}
		for _, m := range got.ManagedFields {
			managers[m.Manager] = true
		}
		if !managers["garra-test"] {
			t.Fatalf("field managers %v, want garra-test among them", managers)
		}

		// The availability the wake reports is the Deployment's own status.
		live, err := admin.AppsV1().Deployments("default").Get(ctx, "sandbox", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		live.Status.Replicas, live.Status.ReadyReplicas, live.Status.AvailableReplicas = 1, 1, 1
		if _, err := admin.AppsV1().Deployments("default").UpdateStatus(ctx, live, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		got, err = c.MergePatchDeployment(ctx, "default", "sandbox", patch, "garra-test")
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.AvailableReplicas != 1 {
			t.Fatalf("available %d after the status said 1", got.Status.AvailableReplicas)
		}

		if _, err := c.MergePatchDeployment(ctx, "default", "absent", patch, "garra-test"); !apierrors.IsNotFound(err) {
			t.Fatalf("patch of an absent Deployment: %v, want NotFound", err)
		}
	})

	t.Run("refused by RBAC", func(t *testing.T) {
		// A user with no grants: the API server's Forbidden reaches the
		// caller as such.
		nobody := rest.CopyConfig(rc)
		nobody.Impersonate = rest.ImpersonationConfig{UserName: "nobody@example.test"}
		nc, err := kube.New(nobody, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, err = nc.MergePatchDeployment(ctx, "default", "sandbox", []byte(`{"spec":{"replicas":1}}`), "garra-test")
		if !apierrors.IsForbidden(err) {
			t.Fatalf("patch without a grant: %v, want Forbidden", err)
		}
	})
}

// New refuses a configuration it cannot build a client from, naming the
// server.
func TestNewNamesTheHost(t *testing.T) {
	_, err := kube.New(&rest.Config{Host: "https://127.0.0.1:1", TLSClientConfig: rest.TLSClientConfig{CAFile: "/nonexistent/ca.crt"}}, 0)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Fatalf("a config with an unreadable CA file: %v", err)
	}
}

// Config without a kubeconfig and outside a pod says so.
func TestConfigOutsideACluster(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	t.Setenv("KUBERNETES_SERVICE_PORT", "")
	if _, err := kube.Config(""); err == nil {
		t.Fatal("in-cluster config built outside a cluster")
	}
}
