package gateway

import (
	"slices"
	"strings"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/errkinds"
)

// The seven tools of POST /mcp.
const (
	ToolStatus      = "garra_status"
	ToolListChats   = "garra_list_chats"
	ToolReadHistory = "garra_read_history"
	ToolPairStatus  = "garra_pair_status"
	ToolSendMessage = "garra_send_message"
	ToolAsk         = "garra_ask"
	ToolAgent       = "garra_agent"
)

// AllTools lists the seven tools in the order tools/list shows them.
var AllTools = []string{ToolStatus, ToolListChats, ToolReadHistory, ToolPairStatus, ToolSendMessage, ToolAsk, ToolAgent}

// toolByGrant maps an orchestrator's `tools` entry to the MCP tool.
var toolByGrant = map[string]string{
	"status": ToolStatus, "list_chats": ToolListChats, "read_history": ToolReadHistory,
	"pair_status": ToolPairStatus, "send_message": ToolSendMessage, "ask": ToolAsk, "agent": ToolAgent,
}

// Caller is who sent a request: the owner (the gateway key) or one
// orchestrator.
type Caller struct {
	Name  string // "owner" or the orchestrator's name
	Owner bool
	// Grants are the MCP tool names the orchestrator's `tools` list names.
	Grants []string
	// Denied are the MCP tool names its `deny_tools` list names; a denied
	// tool is refused even when Grants has it.
	Denied []string
	// Chats restricts which conversations the caller sees; empty = all.
	Chats   []string
	Sandbox *config.OrchestratorSandbox
	// Auth, Identity and IdentityPersonal are how this request proved
	// the caller (authn's Identity): for audit and metrics only.
	Auth             string
	Identity         string
	IdentityPersonal bool
}

// OwnerName is the audit name of the gateway key's holder; no orchestrator
// may take it (config.ReservedOrchestratorNames).
const OwnerName = config.OwnerCallerName

// Switches is the operator configuration the policy reads.
type Switches struct {
	AllowSend        bool
	SendDestinations int // len(channels.telegram.proactive_chat_ids)
	AllowAsk         bool
	AllowAgent       bool
}

// SwitchesFrom extracts the policy inputs from a config.
func SwitchesFrom(c *config.Config) Switches {
	return Switches{
		AllowSend:        c.Gateway.MCPHTTP.AllowSend,
		SendDestinations: len(c.Channels.Telegram.ProactiveChatIDs),
		AllowAsk:         c.Gateway.MCPHTTP.AllowAsk,
		AllowAgent:       c.Gateway.MCPHTTP.AllowAgent,
	}
}

// switchedOn reports whether the operator turned a tool on at all. A send
// switch with no approved destination can send nothing, so it is off.
func (s Switches) switchedOn(tool string) bool {
	switch tool {
	case ToolSendMessage:
		return s.AllowSend && s.SendDestinations > 0
	case ToolAsk:
		return s.AllowAsk
	case ToolAgent:
		return s.AllowAgent
	}
	return true
}

// granted reports whether the caller's identity may use the tool. The owner
// has every tool except garra_agent, which belongs to orchestrators. An
// orchestrator's deny list wins over its grants.
func (c Caller) granted(tool string) bool {
	if c.Owner {
		return tool != ToolAgent
	}
	return slices.Contains(c.Grants, tool) && !c.denied(tool)
}

func (c Caller) denied(tool string) bool { return !c.Owner && slices.Contains(c.Denied, tool) }

// Visible lists the tools c may call now: what tools/list shows it.
func Visible(c Caller, s Switches) []string {
	var out []string
	for _, t := range AllTools {
		if c.granted(t) && s.switchedOn(t) {
			out = append(out, t)
		}
	}
	return out
}

// Refusal returns the stable kind refusing tool for c before any argument
// is read, or "" when the call may proceed. The operator's switch is
// checked before the caller's identity, so a switched-off tool reads the
// same to everyone; then the caller's deny list (tool_denied, whatever its
// tools list says), then its grants (tool_not_allowed).
func Refusal(c Caller, s Switches, tool string) errkinds.Kind {
	switch tool {
	case ToolSendMessage:
		if !s.AllowSend {
			return errkinds.SendDisabled
		}
	case ToolAsk:
		if !s.AllowAsk {
			return errkinds.AskDisabled
		}
	case ToolAgent:
		if !s.AllowAgent {
			return errkinds.AgentDisabled
		}
	}
	if c.denied(tool) {
		return errkinds.ToolDenied
	}
	if !c.granted(tool) {
		return errkinds.ToolNotAllowed
	}
	if tool == ToolSendMessage && s.SendDestinations == 0 {
		return errkinds.NoAllowlist
	}
	return ""
}

// ModelAllowed applies ask_allowed_models (shared by garra_ask and
// garra_agent): empty means the default model only, which is llm.model
// (itself the project default when the config names none).
func ModelAllowed(allowed []string, defaultModel, model string) bool {
	if len(allowed) == 0 {
		return model == defaultModel
	}
	return slices.Contains(allowed, model)
}

// SendTargetRefusal decides a garra_send_message destination after the
// switches: channel, the operator's approved destinations, the caller's
// chat scope. It never needs to echo the chat id.
func SendTargetRefusal(c Caller, channel, chatID string, approved []string) errkinds.Kind {
	if channel != "telegram" {
		return errkinds.ChannelUnsupported
	}
	if len(approved) == 0 {
		return errkinds.NoAllowlist
	}
	if !slices.Contains(approved, chatID) {
		return errkinds.TargetNotAllowed
	}
	if !ChatInScope(c, "telegram:"+chatID) {
		return errkinds.TargetNotAllowed
	}
	return ""
}

// ChatInScope reports whether the caller may see or send to a
// conversation. The owner sees everything; an orchestrator sees only the
// conversations its `chats` list names, so an empty list admits none: a
// third party gets the owner's conversations only by explicit grant. An
// entry is a conversation id ("telegram:-100123") or a bare chat id
// ("-100123", as the GarraServer resource writes them), which matches that
// chat on any channel.
func ChatInScope(c Caller, id string) bool {
	if c.Owner {
		return true
	}
	_, chatID, _ := strings.Cut(id, ":")
	return slices.ContainsFunc(c.Chats, func(entry string) bool {
		return entry == id || (!strings.Contains(entry, ":") && entry == chatID)
	})
}
