package mcppolicy

import "slices"

// The MCP tools. The gateway serves all seven; the stdio server garra_ask
// and, on opt-in, garra_agent.
const (
	ToolStatus      = "garra_status"
	ToolListChats   = "garra_list_chats"
	ToolReadHistory = "garra_read_history"
	ToolPairStatus  = "garra_pair_status"
	ToolSendMessage = "garra_send_message"
	ToolAsk         = "garra_ask"
	ToolAgent       = "garra_agent"
)

// AllTools lists the tools in the order garra://policy shows them.
var AllTools = []string{ToolStatus, ToolListChats, ToolReadHistory, ToolPairStatus, ToolSendMessage, ToolAsk, ToolAgent}

// stdioTools are the tools the stdio server knows at all.
var stdioTools = []string{ToolAsk, ToolAgent}

// toolByGrant maps an orchestrator's `tools` entry to the MCP tool.
var toolByGrant = map[string]string{
	"status": ToolStatus, "list_chats": ToolListChats, "read_history": ToolReadHistory,
	"pair_status": ToolPairStatus, "send_message": ToolSendMessage, "ask": ToolAsk, "agent": ToolAgent,
}

// OnSurface reports whether tool is one the surface c talks to knows: a
// call to any other name is an unknown tool there, whoever asks.
func OnSurface(c Caller, tool string) bool {
	if c.Kind == Local {
		return slices.Contains(stdioTools, tool)
	}
	return slices.Contains(AllTools, tool)
}
