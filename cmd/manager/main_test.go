package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

func TestParseFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    options
		wantErr bool
	}{
		{"defaults", nil, options{metricsAddr: ":8080", probeAddr: ":8081", garraImage: "garra:latest", sandboxImage: "garra:latest"}, false},
		{"everything", []string{"--metrics-bind-address=0", "--health-probe-bind-address=:9000", "--leader-elect",
			"--garra-image=reg/garra:1", "--sandbox-image=reg/sandbox:1", "--leader-election-namespace=ops"},
			options{metricsAddr: "0", probeAddr: ":9000", leaderElect: true, garraImage: "reg/garra:1", sandboxImage: "reg/sandbox:1", leaderElectionNamespace: "ops"}, false},
		{"stray argument", []string{"serve"}, options{}, true},
		{"unknown flag", []string{"--nope"}, options{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("manager", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			got, err := parseFlags(fs, tc.args)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			got.zap = options{}.zap
			if got.metricsAddr != tc.want.metricsAddr || got.probeAddr != tc.want.probeAddr || got.leaderElect != tc.want.leaderElect ||
				got.garraImage != tc.want.garraImage || got.sandboxImage != tc.want.sandboxImage || got.leaderElectionNamespace != tc.want.leaderElectionNamespace {
				t.Errorf("options = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestRunServesProbesAndReconciles runs the manager as main does against a
// real kube-apiserver (the envtest binaries, found as the controllers suite
// finds them): /healthz and /readyz answer and a GarraServer gets its
// gateway Deployment with the --garra-image default.
func TestRunServesProbesAndReconciles(t *testing.T) {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		script := filepath.Join("..", "..", "hack", "envtest.sh")
		if _, err := os.Stat(script); errors.Is(err, os.ErrNotExist) {
			t.Skip("KUBEBUILDER_ASSETS is unset and hack/envtest.sh is absent: no kube-apiserver to run against")
		}
		out, err := exec.Command(script, "--check").Output()
		if err != nil {
			t.Fatalf("envtest binaries are not built yet (%v): run `make envtest-suite` or set KUBEBUILDER_ASSETS", err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		assets = lines[len(lines)-1]
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:       []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing:   true,
		BinaryAssetsDirectory:   assets,
		ControlPlaneStopTimeout: 90 * time.Second,
	}
	cfg, err := env.Start()
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop control plane: %v", err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}

	probe := freeAddr(t)
	o := options{metricsAddr: "0", probeAddr: probe, garraImage: "garra:from-flag", sandboxImage: "sandbox:from-flag"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, o, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	})

	for _, path := range []string{"/healthz", "/readyz"} {
		waitFor(t, path, func() error {
			resp, err := http.Get("http://" + probe + path)
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("status %d", resp.StatusCode)
			}
			return nil
		})
	}

	c, err := client.New(cfg, client.Options{Scheme: newScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "smoke"}}
	gs := &garrav1alpha1.GarraServer{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke", Namespace: "smoke"},
		Spec:       garrav1alpha1.GarraServerSpec{LLM: garrav1alpha1.LLMSpec{Provider: garrav1alpha1.ProviderOllama}},
	}
	for _, obj := range []client.Object{ns, gs} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "gateway Deployment", func() error {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "smoke", Name: "smoke-gateway"}, d); err != nil {
			return err
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "garra:from-flag" {
			return fmt.Errorf("image %q", img)
		}
		return nil
	})
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func waitFor(t *testing.T, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
