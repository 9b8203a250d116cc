package controllers

import (
	"fmt"
	"strings"

	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/config"
)

// GatewayListen is the gateway's listen address in the pod.
const GatewayListen = "0.0.0.0:3888"

// RenderConfig is the gateway's config.yml for gs and its orchestrators ms
// (the inline entries, then the attached Orchestrators), as the gateway's
// own config type. It names a file (the gateway's own credentials) or an
// environment variable (the LLM and Telegram keys) for every secret and
// never holds one. Knobs left zero (a spec the API server did not default) are
// omitted, so the gateway's defaults apply.
func RenderConfig(gs *garrav1alpha1.GarraServer, ms []member) *config.Config {
	spec := gs.Spec
	g := spec.Gateway
	c := &config.Config{
		DataDir: DataDir,
		LLM: config.LLM{
			Provider: string(spec.LLM.Provider),
			Model:    spec.LLM.Model,
			BaseURL:  spec.LLM.BaseURL,
		},
		Gateway: config.Gateway{
			Listen:       GatewayListen,
			APIKeyFile:   APIKeyFile(),
			AllowedHosts: GatewayHosts(gs),
			RateLimit:    config.RateLimit{RequestsPerMinute: int(g.RateLimitPerMinute)},
			DrainSeconds: drainSeconds(gs),
			MCPHTTP: config.MCPHTTP{
				Enabled:              true,
				AllowSend:            g.AllowSend,
				MaxHistoryMessages:   int(g.MaxHistoryMessages),
				AllowAsk:             g.AllowAsk,
				AskAllowedModels:     g.AskAllowedModels,
				AskBudgetPerMinute:   int(g.AskBudgetPerMinute),
				AllowAgent:           g.AllowAgent,
				AgentBudgetPerMinute: int(g.AgentBudgetPerMinute),
				AgentMaxSeconds:      int(g.AgentMaxSeconds),
				RedactPatterns:       g.RedactPatterns,
				WebFetchAllowedHosts: g.WebFetchAllowedHosts,
				Quota:                renderQuota(g.Quota),
			},
		},
	}
	c.Gateway.Egress = renderGatewayEgress(ms)
	if spec.LLM.APIKeySecretRef != nil {
		c.LLM.APIKeyEnv = EnvLLMAPIKey
	}
	if sharedStore(gs) {
		c.Store = config.Store{Driver: config.StorePostgres, DSNEnv: EnvStoreDSN}
		c.Gateway.HandoverSeconds = HandoverSeconds
	}
	if needsTokenReview(ms) || g.Audience != "" {
		c.Gateway.Auth.Audience = Audience(gs)
	}
	if ws := g.WebSearch; ws != nil {
		// The key arrives as BRAVE_API_KEY (gatewayEnvRefs); only the
		// endpoint is in the file.
		c.LLM.Brave.BaseURL = ws.BaseURL
	}
	for _, m := range ms {
		o := m.OrchestratorSettings
		tools := make([]string, 0, len(o.Tools))
		for _, t := range o.Tools {
			tools = append(tools, string(t))
		}
		var deny []string
		for _, t := range o.DenyTools {
			deny = append(deny, string(t))
		}
		keyFile := ""
		if usesToken(o) {
			keyFile = OrchTokenFile(m.tokenKey())
		}
		sbx := &config.OrchestratorSandbox{
			URL:       m.sandboxURL(),
			TokenFile: SandboxTokenFile(m.tokenKey()),
		}
		if idleTimeout(o) > 0 {
			sbx.Wake = &config.SandboxWake{Namespace: m.at.Namespace, Deployment: m.sandboxName()}
		}
		egress, creds := renderEgress(m)
		c.Gateway.MCPHTTP.Orchestrators = append(c.Gateway.MCPHTTP.Orchestrators, config.Orchestrator{
			Name:        m.ID,
			KeyFile:     keyFile,
			Auth:        renderAuth(m),
			Tools:       tools,
			DenyTools:   deny,
			Chats:       o.Chats,
			Sandbox:     sbx,
			Quota:       renderQuota(o.Quota),
			Egress:      egress,
			Credentials: creds,
		})
	}
	if spec.Channels != nil && spec.Channels.Telegram != nil {
		t := spec.Channels.Telegram
		c.Channels.Telegram.ProactiveChatIDs = t.ProactiveChatIDs
		c.Channels.Telegram.Allowlist = t.Allowlist
		if t.BotTokenSecretRef != nil {
			c.Channels.Telegram.BotTokenEnv = EnvTelegramToken
		}
	}
	return c
}

// renderQuota is q in the gateway config's words; nil for none.
func renderQuota(q *garrav1alpha1.QuotaSpec) *config.Quota {
	if q == nil {
		return nil
	}
	n := func(p *int32) int {
		if p == nil {
			return 0
		}
		return int(*p)
	}
	out := &config.Quota{AskPerMinute: n(q.AskPerMinute), AgentPerMinute: n(q.AgentPerMinute), SendPerMinute: n(q.SendPerMinute),
		AgentConcurrent: n(q.AgentConcurrent)}
	if q.LLMTokensPerDay != nil {
		out.LLMTokensPerDay = *q.LLMTokensPerDay
	}
	if out.IsZero() {
		return nil
	}
	return out
}

// effectiveQuota is the allowance in force for an orchestrator whose own
// quota is own, under the gateway default def: the gateway's merge rule
// (config.Quota.Over) applied to their rendered forms, so the status says
// what the gateway enforces. nil when unlimited.
func effectiveQuota(def, own *garrav1alpha1.QuotaSpec) *garrav1alpha1.QuotaSpec {
	q := ptr.Deref(renderQuota(own), config.Quota{}).Over(ptr.Deref(renderQuota(def), config.Quota{}))
	if q.IsZero() {
		return nil
	}
	n := func(v int) *int32 {
		if v <= 0 {
			return nil
		}
		return ptr.To(int32(v)) //nolint:gosec // G115: each field was an int32 of the spec
	}
	out := &garrav1alpha1.QuotaSpec{AskPerMinute: n(q.AskPerMinute), AgentPerMinute: n(q.AgentPerMinute), SendPerMinute: n(q.SendPerMinute),
		AgentConcurrent: n(q.AgentConcurrent)}
	if q.LLMTokensPerDay > 0 {
		out.LLMTokensPerDay = ptr.To(q.LLMTokensPerDay)
	}
	return out
}

// RenderConfigYAML is RenderConfig marshalled as config.yml.
func RenderConfigYAML(gs *garrav1alpha1.GarraServer, ms []member) (string, error) {
	out, err := yaml.Marshal(RenderConfig(gs, ms))
	if err != nil {
		return "", fmt.Errorf("render %s config: %w", gs.Name, err)
	}
	return string(out), nil
}

// gatewayConfigMap is NAME-gateway with key config.yml.
func gatewayConfigMap(gs *garrav1alpha1.GarraServer, configYAML string) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(gatewayName(gs), gs.Namespace).
		WithLabels(labels(gs, ComponentGateway, "")).
		WithOwnerReferences(ownerRefs(gs)...).
		WithData(map[string]string{ConfigKey: configYAML})
}

// gatewayPodEnv and gatewayPodFiles are the secret variables and files the
// gateway pod gets.
func gatewayPodEnv(gs *garrav1alpha1.GarraServer) []string {
	var env []string
	for _, er := range gatewayEnvRefs(gs) {
		env = append(env, er.Env)
	}
	return env
}

func gatewayPodFiles(ms []member) []string {
	files := []string{APIKeyFile()}
	if anyEgressGateway(ms) {
		files = append(files, EgressCACertFile(), EgressCAKeyFile())
	}
	for _, m := range ms {
		if usesToken(m.OrchestratorSettings) {
			files = append(files, OrchTokenFile(m.tokenKey()))
		}
		files = append(files, SandboxTokenFile(m.tokenKey()))
		if egressGateway(m) {
			for _, c := range m.Credentials {
				files = append(files, CredentialFile(m.credentialKey(c.Name)))
			}
		}
	}
	return files
}

// configWarnings are the problems `garra config check` would report for the
// rendered file in the gateway pod: the file as the gateway reads it
// (defaults applied) with every variable and secret file the pod gets
// present. The gateway works around each (it fails closed), so they are
// warnings, not errors.
func configWarnings(configYAML string, podEnv, podFiles []string) ([]config.Problem, error) {
	// config.Default() then the file over it is what Load does (parse, then
	// fill what is unset): every key the operator renders is set, and
	// omitempty leaves the rest to the defaults.
	cfg := config.Default()
	if err := yaml.UnmarshalStrict([]byte(configYAML), cfg); err != nil {
		return nil, fmt.Errorf("parse rendered config: %w", err)
	}
	// The kubelet sets it in every pod: the gateway is in the cluster.
	set := map[string]bool{"KUBERNETES_SERVICE_HOST": true}
	for _, e := range podEnv {
		set[e] = true
	}
	mounted := map[string]bool{}
	for _, f := range podFiles {
		mounted[f] = true
	}
	return cfg.CheckWith(func(k string) string {
		if set[k] {
			return "set"
		}
		return ""
	}, func(p string) (string, error) {
		if mounted[p] {
			// The operator sees only that a file is mounted, not what it
			// holds: stand in a value of a length config check accepts.
			return strings.Repeat("x", config.MinTokenBytes), nil
		}
		return "", fmt.Errorf("%s is not mounted in the gateway pod", p)
	}), nil
}
