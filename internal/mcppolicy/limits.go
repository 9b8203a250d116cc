package mcppolicy

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/garraia/garra/internal/config"
)

// Limits are the operator's settings in force that the policy reads. The
// gateway's come from gateway.mcp_http (GatewayLimits), the stdio
// server's from the GARRAIA_MCP_* variables (StdioFromEnv); each chain
// reads only its own surface's.
type Limits struct {
	// AllowSend, AllowAsk and AllowAgent are the gateway's switches.
	AllowSend bool
	// SendDestinations is len(channels.telegram.proactive_chat_ids).
	SendDestinations int
	AllowAsk         bool
	AllowAgent       bool
	// AskAllowedModels is ask_allowed_models, shared by garra_ask and
	// garra_agent; empty means DefaultModel only.
	AskAllowedModels []string
	// AgentMaxSeconds caps a gateway garra_agent run (agent_max_seconds).
	AgentMaxSeconds int
	// MaxHistoryMessages bounds garra_read_history (max_history_messages).
	MaxHistoryMessages int

	// Stdio are the knobs of `garra mcp-server`.
	Stdio
	// HasAgent is set when an agent runner is wired: the stdio server
	// offers garra_agent only then (it builds one only with EnableTools).
	HasAgent bool

	// DefaultProvider and DefaultModel are what a call that names none
	// gets (llm.provider and llm.model; the project's when unset).
	DefaultProvider string
	DefaultModel    string
}

// GatewayLimits extracts the gateway's limits from a config.
func GatewayLimits(c *config.Config) Limits {
	m := c.Gateway.MCPHTTP
	return Limits{
		AllowSend:          m.AllowSend,
		SendDestinations:   len(c.Channels.Telegram.ProactiveChatIDs),
		AllowAsk:           m.AllowAsk,
		AllowAgent:         m.AllowAgent,
		AskAllowedModels:   m.AskAllowedModels,
		AgentMaxSeconds:    m.AgentMaxSeconds,
		MaxHistoryMessages: m.MaxHistoryMessages,
		HasAgent:           true,
		DefaultProvider:    c.LLM.Provider,
		DefaultModel:       c.LLM.Model,
	}
}

// WithDefaults fills empty defaults with the project's.
func (l Limits) WithDefaults() Limits {
	if l.DefaultProvider == "" {
		l.DefaultProvider = config.DefaultProvider
	}
	if l.DefaultModel == "" {
		l.DefaultModel = config.DefaultModel
	}
	return l
}

// Operator knobs read once when `garra mcp-server` boots.
const (
	EnvModelAllowlist = "GARRAIA_MCP_MODEL_ALLOWLIST"
	EnvMaxTimeoutSecs = "GARRAIA_MCP_MAX_TIMEOUT_SECS"
	EnvEnableTools    = "GARRAIA_MCP_ENABLE_TOOLS"
	EnvAllowedDirs    = "GARRAIA_MCP_ALLOWED_DIRS"
)

// Stdio is the operator's limits on the stdio tools.
type Stdio struct {
	// ModelAllowlist, when non-empty, is the only models a call may use
	// (explicit or defaulted).
	ModelAllowlist []string
	// MaxTimeoutSecs caps timeout_secs; 0 means no cap beyond the schema's.
	MaxTimeoutSecs int
	// EnableTools advertises and dispatches garra_agent.
	EnableTools bool
}

// StdioFromEnv reads the GARRAIA_MCP_* knobs. A malformed value is an
// error naming the variable: a typo must not silently lift a limit.
func StdioFromEnv(getenv func(string) string) (Stdio, error) {
	var p Stdio
	for _, m := range strings.Split(getenv(EnvModelAllowlist), ",") {
		if m = strings.TrimSpace(m); m != "" {
			p.ModelAllowlist = append(p.ModelAllowlist, m)
		}
	}
	if v := strings.TrimSpace(getenv(EnvMaxTimeoutSecs)); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return p, fmt.Errorf("%s=%q: want a whole number of seconds ≥ 1", EnvMaxTimeoutSecs, v)
		}
		p.MaxTimeoutSecs = n
	}
	p.EnableTools = Truthy(getenv(EnvEnableTools))
	return p, nil
}

// Truthy reports whether an env value switches a knob on: 1, true or yes,
// in any case.
func Truthy(v string) bool {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes":
		return true
	}
	return false
}

// String is the one boot-log line describing the stdio limits in force.
func (p Stdio) String() string {
	models := "any"
	if len(p.ModelAllowlist) > 0 {
		models = strings.Join(p.ModelAllowlist, ",")
	}
	maxTimeout := "schema max"
	if p.MaxTimeoutSecs > 0 {
		maxTimeout = strconv.Itoa(p.MaxTimeoutSecs) + "s"
	}
	return fmt.Sprintf("models=%s max_timeout=%s agent_tool=%t", models, maxTimeout, p.EnableTools)
}

// timeoutCap is the stdio ceiling for a tool whose schema maximum is
// schemaMax: the operator cap clamped to the schema.
func (p Stdio) timeoutCap(schemaMax int) int {
	if p.MaxTimeoutSecs > 0 && p.MaxTimeoutSecs < schemaMax {
		return p.MaxTimeoutSecs
	}
	return schemaMax
}

// stdioModelAllowed applies GARRAIA_MCP_MODEL_ALLOWLIST: empty allows any.
func (p Stdio) stdioModelAllowed(model string) bool {
	return len(p.ModelAllowlist) == 0 || slices.Contains(p.ModelAllowlist, model)
}
