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
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Start runs an API server for the test and returns an admin config for
// it; the server stops when the test ends.
func Start(t testing.TB) *rest.Config {
	t.Helper()
	return StartServer(t).Config
}

// Server is a running API server (with its etcd).
type Server struct {
	// Config is an admin's.
	Config *rest.Config
	env    *envtest.Environment
	once   sync.Once
}

// Stop stops the API server before the test ends, for a test of what a
// client does when it goes away. Stopping twice is stopping once.
func (s *Server) Stop() {
	s.once.Do(func() { _ = s.env.Stop() })
}

// StartServer is Start for a test that also stops the server itself.
func StartServer(t testing.TB) *Server {
	t.Helper()
	env := &envtest.Environment{}
	s := &Server{Config: start(t, env), env: env}
	t.Cleanup(s.Stop)
	return s
}

// StartEnvironment starts env (its CRDs, its users) with the binaries Start
// would use, and stops it when the test ends.
func StartEnvironment(t testing.TB, env *envtest.Environment) *rest.Config {
	t.Helper()
	cfg := start(t, env)
	t.Cleanup(func() { _ = env.Stop() })
	return cfg
}

func start(t testing.TB, env *envtest.Environment) *rest.Config {
	t.Helper()
	env.BinaryAssetsDirectory = Assets(t)
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("envtest: %v", err)
	}
	return cfg
}

// Assets is the directory of kube-apiserver, etcd and kubectl, or skips
// the test saying why there is none.
func Assets(t testing.TB) string {
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
	return dir
}
