package mcpserver

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/mcppolicy"
)

// SchemaPolicy tags the garra://policy document of both surfaces.
const SchemaPolicy = "garra.policy.v1"

// policyResource is garra://policy as resources/list shows it.
func (s *server) policyResource() *mcp.Resource {
	if s.local() {
		return &mcp.Resource{URI: mcppolicy.ResourcePolicy, Name: "policy", Title: "Operator limits in force", MIMEType: jsonMIME,
			Description: "The GARRAIA_MCP_* limits this server started with: tools, model allowlist, timeout caps, and how many file roots garra_agent has (garra.policy.v1)."}
	}
	return &mcp.Resource{URI: mcppolicy.ResourcePolicy, Name: "policy", Title: "This caller's policy", MIMEType: jsonMIME,
		Description: "Your own effective policy: tools, budgets left this minute, allowed models, agent ceiling, chat scope (garra.policy.v1)."}
}

// policyView is what garra://policy shows the caller now.
func (s *server) policyView() any {
	if s.local() {
		return s.stdioPolicy()
	}
	return s.gatewayPolicy()
}

// stdioPolicyView is garra.policy.v1 on stdio: the operator knobs in
// force. It shows how many file roots garra_agent has, never which: the
// paths name the host's layout (home directory, user name), and the model
// on the other side of the MCP host has no need for them; the operator
// knows them from the environment.
type stdioPolicyView struct {
	Schema       string   `json:"schema"`
	Surface      string   `json:"surface"`
	Tools        []string `json:"tools"`
	ToolsEnabled bool     `json:"tools_enabled"`
	// ModelAllowlist is GARRAIA_MCP_MODEL_ALLOWLIST; empty = any model.
	ModelAllowlist []string `json:"model_allowlist"`
	// MaxTimeoutSecs is GARRAIA_MCP_MAX_TIMEOUT_SECS; 0 = no operator cap.
	MaxTimeoutSecs int `json:"max_timeout_secs"`
	// TimeoutCaps is the effective timeout_secs ceiling of each tool.
	TimeoutCaps map[string]int `json:"timeout_caps"`
	// AllowedDirs counts garra_agent's file roots (GARRAIA_MCP_ALLOWED_DIRS,
	// else agent.file_roots plus the cwd); present with garra_agent only.
	AllowedDirs *int `json:"allowed_dirs,omitempty"`
}

func (s *server) stdioPolicy() stdioPolicyView {
	vis := mcppolicy.Visible(s.c, s.l)
	v := stdioPolicyView{
		Schema: SchemaPolicy, Surface: audit.SurfaceStdio,
		Tools:          append([]string{}, vis...),
		ToolsEnabled:   s.l.EnableTools,
		ModelAllowlist: append([]string{}, s.l.ModelAllowlist...),
		MaxTimeoutSecs: s.l.MaxTimeoutSecs,
		TimeoutCaps:    map[string]int{},
	}
	for _, t := range vis {
		v.TimeoutCaps[t] = mcppolicy.TimeoutBounds(s.c, s.l, t).Cap
	}
	if mcppolicy.CanCall(s.c, s.l, mcppolicy.ToolAgent) {
		v.AllowedDirs = ptr(s.o.FileRoots)
	}
	return v
}

// gatewayPolicyView is garra.policy.v1 on the gateway: the caller's own
// effective policy, never another caller's. Budgets, models and the agent
// ceiling appear only for tools the caller can see.
type gatewayPolicyView struct {
	Schema             string                `json:"schema"`
	Surface            string                `json:"surface"`
	Caller             string                `json:"caller"`
	Owner              bool                  `json:"owner"`
	Tools              []string              `json:"tools"`
	Resources          []string              `json:"resources"`
	Budgets            map[string]budgetView `json:"budgets"`
	AllowedModels      []string              `json:"allowed_models,omitempty"`
	AgentMaxSeconds    int                   `json:"agent_max_seconds,omitempty"`
	MaxHistoryMessages int                   `json:"max_history_messages,omitempty"`
	ChatScope          *chatScope            `json:"chat_scope,omitempty"`
}

type budgetView struct {
	Remaining int `json:"remaining"`
	PerMinute int `json:"per_minute"`
}

type chatScope struct {
	All   bool     `json:"all"`
	Chats []string `json:"chats,omitempty"`
}

func (s *server) gatewayPolicy() gatewayPolicyView {
	has := func(t string) bool { return mcppolicy.CanCall(s.c, s.l, t) }
	p := gatewayPolicyView{Schema: SchemaPolicy, Surface: audit.SurfaceHTTP, Caller: s.c.Name, Owner: s.c.IsOwner(),
		Tools: append([]string{}, mcppolicy.Visible(s.c, s.l)...), Resources: mcppolicy.VisibleResources(s.c, s.l),
		Budgets: map[string]budgetView{}}
	for _, b := range []struct {
		name, tool string
		budget     Budget
	}{{"send", mcppolicy.ToolSendMessage, s.o.Budgets.Send}, {"ask", mcppolicy.ToolAsk, s.o.Budgets.Ask}, {"agent", mcppolicy.ToolAgent, s.o.Budgets.Agent}} {
		if has(b.tool) && b.budget != nil {
			p.Budgets[b.name] = budgetView{Remaining: b.budget.Remaining(), PerMinute: b.budget.Limit()}
		}
	}
	if has(mcppolicy.ToolAsk) || has(mcppolicy.ToolAgent) {
		p.AllowedModels = mcppolicy.AllowedModels(s.l)
	}
	if has(mcppolicy.ToolAgent) {
		p.AgentMaxSeconds = s.l.AgentMaxSeconds
	}
	if has(mcppolicy.ToolReadHistory) {
		p.MaxHistoryMessages = s.l.MaxHistoryMessages
	}
	if has(mcppolicy.ToolListChats) || has(mcppolicy.ToolReadHistory) || has(mcppolicy.ToolSendMessage) {
		if s.c.IsOwner() || len(s.c.Chats) == 0 {
			p.ChatScope = &chatScope{All: true}
		} else {
			p.ChatScope = &chatScope{Chats: s.c.Chats}
		}
	}
	return p
}
