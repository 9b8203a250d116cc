//go:build e2e

// Package e2e is the end-to-end suite on a real Kubernetes cluster: the
// operator installed by its Helm chart, a GarraServer with two
// orchestrators, and an agent run whose file and shell tools act inside the
// caller's own sandbox pod. It runs against whatever cluster KUBECONFIG
// names (`make e2e` brings up a local one when none is given) and is built
// only with -tags e2e, so `make test` never needs a cluster.
package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// params are the suite's knobs, all from the environment so that `make e2e`,
// a Kind user and CI pass them the same way.
type params struct {
	// Kubeconfig is KUBECONFIG (required).
	Kubeconfig string
	// GarraImage, SandboxImage, DoubleImage, PostgresImage and
	// ToolchainImage (a team's own build image, without garra) are the
	// images to run (E2E_GARRA_IMAGE, E2E_SANDBOX_IMAGE,
	// E2E_LLMDOUBLE_IMAGE, E2E_POSTGRES_IMAGE, E2E_TOOLCHAIN_IMAGE;
	// defaults localhost/<name>:E2E_IMAGE_TAG, tag default e2e).
	GarraImage, SandboxImage, DoubleImage, PostgresImage, ToolchainImage string
	// ImagesDir holds the image tarballs of hack/images.sh (E2E_IMAGES_DIR);
	// Loader, when set, is run once per tarball with {} replaced by its path
	// (E2E_LOADER, e.g. `kind load image-archive {}`). No loader means the
	// images are already on the node.
	ImagesDir, Loader string
	// StorageClass names a provisioner for the claims (E2E_STORAGE_CLASS,
	// e.g. Kind's "standard"). Empty means the suite makes its own
	// hostPath PersistentVolumes under HostPathDir (E2E_HOSTPATH_DIR), which
	// must then be a directory of the node: this host for the local cluster.
	StorageClass, HostPathDir string
	// Namespace of the operator (E2E_OPERATOR_NAMESPACE) and of the
	// GarraServers (E2E_NAMESPACE).
	OperatorNamespace, Namespace string
	// Access is how the host reaches Services (E2E_ACCESS): "clusterip"
	// (default; the host routes to the Service network, as on the local
	// cluster) or "port-forward" (through the API server, as on Kind).
	Access string
	// Timings, when set, is a file the suite appends its timings to
	// (E2E_TIMINGS), for the issue note and make bench.
	Timings string
}

// staticStorageClass is the class of the suite's own hostPath volumes.
const staticStorageClass = "garra-e2e-static"

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func loadParams() (params, error) {
	tag := env("E2E_IMAGE_TAG", "e2e")
	p := params{
		Kubeconfig:        os.Getenv("KUBECONFIG"),
		GarraImage:        env("E2E_GARRA_IMAGE", "localhost/garra:"+tag),
		SandboxImage:      env("E2E_SANDBOX_IMAGE", "localhost/garra-sandbox:"+tag),
		DoubleImage:       env("E2E_LLMDOUBLE_IMAGE", "localhost/garra-llmdouble:"+tag),
		PostgresImage:     env("E2E_POSTGRES_IMAGE", "localhost/garra-postgres:"+tag),
		ToolchainImage:    env("E2E_TOOLCHAIN_IMAGE", "localhost/garra-e2e-toolchain:"+tag),
		ImagesDir:         os.Getenv("E2E_IMAGES_DIR"),
		Loader:            os.Getenv("E2E_LOADER"),
		StorageClass:      os.Getenv("E2E_STORAGE_CLASS"),
		HostPathDir:       env("E2E_HOSTPATH_DIR", "/tmp/garra-e2e-pv"),
		OperatorNamespace: env("E2E_OPERATOR_NAMESPACE", "garra-system"),
		Namespace:         env("E2E_NAMESPACE", "garra-e2e"),
		Access:            env("E2E_ACCESS", accessClusterIP),
		Timings:           os.Getenv("E2E_TIMINGS"),
	}
	var bad []string
	if p.Kubeconfig == "" {
		bad = append(bad, "KUBECONFIG is not set: the suite needs a cluster (make e2e brings up a local one)")
	}
	if p.Loader != "" && !strings.Contains(p.Loader, "{}") {
		bad = append(bad, fmt.Sprintf("E2E_LOADER %q has no {} for the tarball path", p.Loader))
	}
	if p.Loader != "" && p.ImagesDir == "" {
		bad = append(bad, "E2E_LOADER is set but E2E_IMAGES_DIR is not")
	}
	if p.StorageClass == "" && !filepath.IsAbs(p.HostPathDir) {
		bad = append(bad, fmt.Sprintf("E2E_HOSTPATH_DIR %q is not absolute", p.HostPathDir))
	}
	if p.Access != accessClusterIP && p.Access != accessPortForward {
		bad = append(bad, fmt.Sprintf("E2E_ACCESS %q is neither %q nor %q", p.Access, accessClusterIP, accessPortForward))
	}
	if len(bad) > 0 {
		return p, fmt.Errorf("e2e parameters: %s", strings.Join(bad, "; "))
	}
	return p, nil
}

// claimClass is the storageClassName the GarraServers ask for.
func (p params) claimClass() string {
	if p.StorageClass != "" {
		return p.StorageClass
	}
	return staticStorageClass
}
