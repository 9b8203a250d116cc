package config

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// OrchestratorTools is the closed set of tool names an orchestrator may list.
var OrchestratorTools = []string{"status", "list_chats", "read_history", "pair_status", "send_message", "ask", "agent"}

// Bounds of gateway.mcp_http.agent_max_seconds.
const (
	MinAgentMaxSeconds = 5
	MaxAgentMaxSeconds = 600
)

// Problem is one thing wrong with a configuration, named by its key.
type Problem struct {
	Field   string
	Message string
	// Warning marks a problem that is a risk rather than a fault: the
	// configuration works as written. `garra config check` prints it but
	// exits 0 when nothing else is wrong.
	Warning bool
	// FailsClosed marks a fault the gateway runs around by disabling only
	// what the message names (one orchestrator, its agent tools, the
	// default provider's calls): `garra config check` still fails on it,
	// but a live reload applies the rest of the configuration rather than
	// holding every other tenant's change back for one missing token.
	FailsClosed bool
}

func (p Problem) String() string { return p.Field + ": " + p.Message }

var dnsLabel = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
})

// OrchestratorNameValid reports whether name can name an orchestrator: a
// DNS label of at most 40 characters (an inline entry of a GarraServer, or
// a laptop's), or NAMESPACE/NAME for an Orchestrator object, whose name is
// unique only in its namespace.
func OrchestratorNameValid(name string) bool {
	label := func(s string, most int) bool { return len(s) <= most && dnsLabel().MatchString(s) }
	if ns, n, ok := strings.Cut(name, "/"); ok {
		return label(ns, 63) && label(n, 40)
	}
	return label(name, 40)
}

// Check lists every problem of c, in file order. getenv resolves the
// variables the file names (keys are never in the file), and the secret
// files it names are read (ReadSecretFile). A configuration with problems
// may still boot (the gateway fails closed around them), but `garra config
// check` exits 1 on any that is not a Warning, so that they are fixed.
func (c *Config) Check(getenv func(string) string) []Problem {
	return c.CheckSecrets(getenv, nil)
}

// CheckSecrets is Check with the secret files read by read (nil: the
// disk), for a gateway that reads some of them from the API server.
// Tokens are compared by value, so only against the real secrets: a
// rendered config checked with stand-in files (CheckWith) would collide
// everywhere.
func (c *Config) CheckSecrets(getenv func(string) string, read SecretReader) []Problem {
	read = read.orDisk()
	return slices.Concat(c.CheckWith(getenv, read), c.checkTokens(getenv, read), c.checkEgressCA())
}

// CheckWith is Check with the secret files read by readFile: the operator
// checks a rendered config against the files its pod will mount.
func (c *Config) CheckWith(getenv func(string) string, readFile func(string) (string, error)) []Problem {
	readFile = readOnce(readFile)
	var ps []Problem
	add := func(field, format string, a ...any) {
		ps = append(ps, Problem{Field: field, Message: fmt.Sprintf(format, a...)})
	}
	failsClosed := func(field, format string, a ...any) {
		ps = append(ps, Problem{Field: field, Message: fmt.Sprintf(format, a...), FailsClosed: true})
	}

	if _, err := c.ResolveProvider(c.LLM.Provider); err != nil {
		add("llm.provider", "%v", err)
	}
	ps = append(ps, c.checkProviderKey(getenv)...)
	ps = append(ps, c.checkDefaultModel()...)
	ps = append(ps, c.checkEndpoints()...)
	for name, a := range c.LLM.Aliases {
		if !isKind(a.Provider) {
			add("llm.aliases."+name+".provider", "%q is not one of ollama, anthropic, openai, openrouter", a.Provider)
		}
	}
	if p := c.Execution.Profile; p != ProfileStandard && p != ProfileIsolatedPod {
		add("execution.profile", "%q is not standard or isolated-pod", p)
	}
	if m := c.Agent.Sandbox.Mode; !slices.Contains([]string{"off", "all", "allowlist"}, m) {
		add("agent.sandbox.mode", "%q is not off, all or allowlist", m)
	}
	if b := c.Agent.Sandbox.Backend; !slices.Contains([]string{"docker", "podman", "ssh"}, b) {
		add("agent.sandbox.backend", "%q is not docker, podman or ssh", b)
	}

	g := c.Gateway
	m := g.MCPHTTP
	if g.APIKeyFile != "" && getenv(EnvGatewayAPIKey) == "" {
		if g.APIKey != "" {
			add("gateway.api_key_file", "gateway.api_key is set too: set only one")
		} else if _, err := readFile(g.APIKeyFile); err != nil {
			add("gateway.api_key_file", "%v: the gateway has no owner key", err)
		}
	}
	if m.Enabled && g.APIKey == "" && g.APIKeyFile == "" {
		add("gateway.mcp_http.enabled", "the bridge is enabled without a credential: set gateway.api_key_file, gateway.api_key or %s, or /mcp answers 404", EnvGatewayAPIKey)
	}
	if m.AllowSend && len(c.Channels.Telegram.ProactiveChatIDs) == 0 {
		add("gateway.mcp_http.allow_send", "sending is enabled without an approved destination: list chats in channels.telegram.proactive_chat_ids, or every send is refused")
	}
	if m.AgentMaxSeconds < MinAgentMaxSeconds || m.AgentMaxSeconds > MaxAgentMaxSeconds {
		add("gateway.mcp_http.agent_max_seconds", "%d is outside [%d, %d]", m.AgentMaxSeconds, MinAgentMaxSeconds, MaxAgentMaxSeconds)
	}
	if m.MaxHistoryMessages < 1 {
		add("gateway.mcp_http.max_history_messages", "%d must be at least 1", m.MaxHistoryMessages)
	}
	if g.DrainSeconds < MinDrainSeconds || g.DrainSeconds > MaxDrainSeconds {
		add("gateway.drain_seconds", "%d is outside [%d, %d]", g.DrainSeconds, MinDrainSeconds, MaxDrainSeconds)
	}
	if g.HandoverSeconds < 0 || g.HandoverSeconds > MaxHandoverSeconds {
		add("gateway.handover_seconds", "%d is outside [0, %d]", g.HandoverSeconds, MaxHandoverSeconds)
	}
	switch c.Store.Driver {
	case StoreSQLite:
		if c.Store.DSNEnv != "" || c.Store.DSNFile != "" {
			add("store.driver", "sqlite ignores dsn_env and dsn_file: set driver: postgres, or remove them")
		}
	case StorePostgres:
		if _, err := c.StoreDSN(getenv, readFile); err != nil {
			field, msg, _ := strings.Cut(err.Error(), ": ")
			add(field, "%s", msg)
		}
	default:
		add("store.driver", "%q is not sqlite or postgres", c.Store.Driver)
	}
	if g.RateLimit.RequestsPerMinute < 1 {
		add("gateway.rate_limit.requests_per_minute", "%d must be at least 1", g.RateLimit.RequestsPerMinute)
	}
	ps = append(ps, checkRedactPatterns(m.RedactPatterns)...)
	ps = append(ps, checkWebFetchAllowedHosts(m.WebFetchAllowedHosts)...)
	for i, id := range c.Channels.Telegram.ProactiveChatIDs {
		if _, err := strconv.ParseInt(id, 10, 64); err != nil {
			add(fmt.Sprintf("channels.telegram.proactive_chat_ids[%d]", i), "%q is not a Telegram chat id (a 64-bit integer)", id)
		}
	}

	ps = append(ps, quotaProblems("gateway.mcp_http", m.Quota)...)
	seen := map[string]bool{}
	for i, o := range m.Orchestrators {
		field := fmt.Sprintf("gateway.mcp_http.orchestrators[%d]", i)
		if o.Name != "" {
			field = "gateway.mcp_http.orchestrators[" + o.Name + "]"
		}
		switch {
		case o.Name == "":
			add(field+".name", "required")
		case !OrchestratorNameValid(o.Name):
			add(field+".name", "%q must be a DNS label of at most 40 characters, or NAMESPACE/NAME (an Orchestrator object's) with a namespace of at most 63", o.Name)
		case seen[o.Name]:
			add(field+".name", "duplicate orchestrator %q", o.Name)
		}
		seen[o.Name] = true
		ps = append(ps, orchestratorPolicyProblems(field, o)...)
		switch {
		case o.AuthMode() != AuthToken:
			// checkAuth: these modes hold no token.
		case o.KeyEnv != "" && o.KeyFile != "":
			add(field+".key_file", "key_env is set too: set only one")
		case o.KeyFile != "":
			if _, err := readFile(o.KeyFile); err != nil {
				failsClosed(field+".key_file", "%v: this orchestrator is disabled", err)
			}
		case o.KeyEnv == "":
			add(field+".key_env", "required (or key_file): the environment variable holding this orchestrator's token")
		case getenv(o.KeyEnv) == "":
			failsClosed(field+".key_env", "%s is not set: this orchestrator is disabled", o.KeyEnv)
		}
		for _, t := range o.Tools {
			if !slices.Contains(OrchestratorTools, t) {
				add(field+".tools", "%q is not one of %v", t, OrchestratorTools)
			}
		}
		if slices.Contains(o.Tools, "agent") && !m.AllowAgent {
			failsClosed(field+".tools", "lists agent but gateway.mcp_http.allow_agent is false: every call gets agent_disabled")
		}
		if o.Sandbox != nil {
			if u, err := url.Parse(o.Sandbox.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				add(field+".sandbox.url", "%q is not an http(s) URL", o.Sandbox.URL)
			}
			switch {
			case o.Sandbox.TokenEnv != "" && o.Sandbox.TokenFile != "":
				add(field+".sandbox.token_file", "token_env is set too: set only one")
			case o.Sandbox.TokenFile != "":
				if _, err := readFile(o.Sandbox.TokenFile); err != nil {
					failsClosed(field+".sandbox.token_file", "%v: agent tools for this orchestrator are refused", err)
				}
			case o.Sandbox.TokenEnv == "":
				add(field+".sandbox.token_env", "required with sandbox.url (or token_file)")
			case getenv(o.Sandbox.TokenEnv) == "":
				failsClosed(field+".sandbox.token_env", "%s is not set: agent tools for this orchestrator are refused", o.Sandbox.TokenEnv)
			}
			if w := o.Sandbox.Wake; w != nil {
				if w.Namespace == "" {
					add(field+".sandbox.wake.namespace", "required: the namespace of the sandbox's Deployment")
				}
				if w.Deployment == "" {
					add(field+".sandbox.wake.deployment", "required: the name of the sandbox's Deployment")
				}
			}
		}
	}
	ps = append(ps, c.checkAuth(getenv, readFile)...)
	ps = append(ps, c.checkTokenLengths(getenv, readFile)...)
	ps = append(ps, c.checkConfinement()...)
	ps = append(ps, c.checkEgress(readFile)...)
	return ps
}
