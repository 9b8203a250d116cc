package main

import (
	"context"
	"fmt"
	"time"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/kube"
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
	if cfg.Gateway.Auth.Kubeconfig == "" && getenv("KUBERNETES_SERVICE_HOST") == "" {
		return nil // Check said there is no API server
	}
	rc, err := kube.Config(cfg.Gateway.Auth.Kubeconfig)
	var c *kube.Client
	if err == nil {
		c, err = kube.New(rc, apiServerProbeTimeout)
	}
	if err != nil {
		return []config.Problem{{Field: field, FailsClosed: true, Message: fmt.Sprintf("no API server client: %v", err)}}
	}
	ctx, cancel := context.WithTimeout(context.Background(), apiServerProbeTimeout)
	defer cancel()
	if _, err := c.Version(ctx); err != nil {
		return []config.Problem{{Field: field, FailsClosed: true,
			Message: fmt.Sprintf("the API server at %s is not reachable (%v): ServiceAccount tokens cannot be reviewed, so these orchestrators are refused", c.Host(), err)}}
	}
	return nil
}
