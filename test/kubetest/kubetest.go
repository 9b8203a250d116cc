// Package kubetest starts a real kube-apiserver and etcd (controller-runtime's
// envtest) for the tests of packages that talk to the API server. The
// binaries come from $KUBEBUILDER_ASSETS, else from what
// `hack/envtest.sh --check` finds (it never builds); without either the
// test is skipped with the reason.
package kubetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Start runs an API server for the test and returns an admin config for
// it; the server stops when the test ends.
func Start(t testing.TB) *rest.Config {
	t.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		_, self, _, _ := runtime.Caller(0)
		script := filepath.Join(filepath.Dir(self), "..", "..", "hack", "envtest.sh")
		out, err := exec.Command(script, "--check").Output()
		if err != nil {
			t.Skipf("envtest binaries unavailable (set KUBEBUILDER_ASSETS or run `make envtest-assets`): %v", err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		dir = lines[len(lines)-1]
	}
	env := &envtest.Environment{BinaryAssetsDirectory: dir}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	return cfg
}
