package gateway

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// SchemaMCP tags the envelope of every tool except garra_ask and garra_agent.
const SchemaMCP = "garra.mcp.v1"

// mcpEnvelope is garra.mcp.v1: {schema, ok, tool, data} on success,
// {schema, ok:false, tool, error:{kind, message}} on a refusal.
type mcpEnvelope struct {
	Schema string    `json:"schema"`
	OK     bool      `json:"ok"`
	Tool   string    `json:"tool"`
	Data   any       `json:"data,omitempty"`
	Error  *mcpError `json:"error,omitempty"`
}

type mcpError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

func okResult(tool string, data any) *mcp.CallToolResult {
	return textResult(mcpEnvelope{Schema: SchemaMCP, OK: true, Tool: tool, Data: data}, false)
}

func refusedResult(tool, kind string) *mcp.CallToolResult {
	return textResult(mcpEnvelope{Schema: SchemaMCP, Tool: tool, Error: &mcpError{Kind: kind, Message: refusalMessage(kind)}}, true)
}

func textResult(v any, isError bool) *mcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"schema":"garra.mcp.v1","ok":false,"error":{"kind":"internal","message":"encode result"}}`)
		isError = true
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, IsError: isError}
}

// refusalMessage is the fixed sentence for each kind. None names the
// requested destination or anything the caller did not already send.
func refusalMessage(kind string) string {
	switch kind {
	case KindToolNotAllowed:
		return "this caller may not use this tool"
	case KindToolDenied:
		return "this tool is in this caller's deny_tools"
	case KindSendDisabled:
		return "sending is disabled on this gateway (gateway.mcp_http.allow_send)"
	case KindNoAllowlist:
		return "no destination is approved for sending (channels.telegram.proactive_chat_ids)"
	case KindTargetNotAllowed:
		return "the destination is not approved for this caller"
	case KindChannelUnsupported:
		return "only the telegram channel can be sent to"
	case KindRateLimited:
		return "the shared send budget is exhausted; try again in a minute"
	case KindChannelOffline:
		return "the channel is not running"
	case KindDeliveryFailed:
		return "the channel refused the message; the gateway log has the reason"
	case KindAskDisabled:
		return "garra_ask is disabled on this gateway (gateway.mcp_http.allow_ask)"
	case KindAgentDisabled:
		return "garra_agent is disabled on this gateway (gateway.mcp_http.allow_agent)"
	case KindModelNotAllowed:
		return "the model is not in gateway.mcp_http.ask_allowed_models"
	case KindOverBudget:
		return "the per-minute budget for this tool is exhausted; try again later"
	case KindNotFound:
		return "no such conversation"
	case KindUnavailable:
		return "the conversation store is unavailable"
	}
	return kind
}
