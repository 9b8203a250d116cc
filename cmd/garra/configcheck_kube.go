package main

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/garraia/garra/internal/config"
)

// apiServerProbeTimeout bounds the one request config check sends.
const apiServerProbeTimeout = 5 * time.Second

// apiServerProblems asks the API server that would review the
// ServiceAccount tokens for its version, once, when some orchestrator
// authenticates with a ServiceAccount: a configuration can name an API
// server (in the cluster, or gateway.auth.kubeconfig) that is not there.
// config.Check already names the case with none to ask.
func apiServerProblems(cfg *config.Config, getenv func(string) string) []config.Problem {
	field := ""
	for _, o := range cfg.Gateway.MCPHTTP.Orchestrators {
		if o.AuthMode() == config.AuthServiceAccount {
			field = "gateway.mcp_http.orchestrators[" + o.Name + "].auth.service_account"
			break
		}
	}
	if field == "" {
		return nil
	}
	var rc *rest.Config
	var err error
	switch {
	case cfg.Gateway.Auth.Kubeconfig != "":
		rc, err = clientcmd.BuildConfigFromFlags("", cfg.Gateway.Auth.Kubeconfig)
	case getenv("KUBERNETES_SERVICE_HOST") != "":
		rc, err = rest.InClusterConfig()
	default:
		return nil // Check said there is no API server
	}
	if err != nil {
		return []config.Problem{{Field: field, FailsClosed: true, Message: fmt.Sprintf("no API server client: %v", err)}}
	}
	rc.Timeout = apiServerProbeTimeout
	dc, err := discovery.NewDiscoveryClientForConfig(rc)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), apiServerProbeTimeout)
		defer cancel()
		_, err = dc.RESTClient().Get().AbsPath("/version").Do(ctx).Raw()
	}
	if err != nil {
		return []config.Problem{{Field: field, FailsClosed: true,
			Message: fmt.Sprintf("the API server at %s is not reachable (%v): ServiceAccount tokens cannot be reviewed, so these orchestrators are refused", rc.Host, err)}}
	}
	return nil
}
