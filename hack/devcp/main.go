// Command devcp runs a local control plane (kube-apiserver and etcd from the
// envtest binaries, no nodes, no controllers besides the API server's own)
// for `make dev` (hack/dev.sh): it installs the CRDs, writes an admin
// kubeconfig, prints "ready" and blocks until SIGINT or SIGTERM, then stops
// kube-apiserver and etcd.
//
//	KUBEBUILDER_ASSETS=$(hack/envtest.sh) go run ./hack/devcp --out-kubeconfig /tmp/dev.kubeconfig
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

func main() {
	kubeconfig := flag.String("out-kubeconfig", "dev.kubeconfig", "where to write the admin kubeconfig")
	crds := flag.String("crd-dir", "config/crd/bases", "CRDs to install")
	flag.Parse()
	if err := run(*kubeconfig, *crds); err != nil {
		fmt.Fprintln(os.Stderr, "devcp:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, crds string) error {
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return fmt.Errorf("KUBEBUILDER_ASSETS is unset (export KUBEBUILDER_ASSETS=\"$(hack/envtest.sh)\")")
	}
	// Stop on a signal that arrives while starting, too.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)

	env := &envtest.Environment{
		CRDDirectoryPaths:       []string{crds},
		ErrorIfCRDPathMissing:   true,
		BinaryAssetsDirectory:   assets,
		ControlPlaneStopTimeout: 90 * time.Second,
	}
	cfg, err := env.Start()
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "devcp: stop:", err)
		}
	}()
	if err != nil {
		return err
	}
	user, err := env.AddUser(envtest.User{Name: "dev-admin", Groups: []string{"system:masters"}}, cfg)
	if err != nil {
		return err
	}
	data, err := user.KubeConfig()
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
		return err
	}
	fmt.Printf("ready %s\n", cfg.Host)
	s := <-sig
	fmt.Fprintf(os.Stderr, "devcp: %s, stopping the control plane\n", s)
	return nil
}
