package gateway

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/errkinds"
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
	Kind    errkinds.Kind `json:"kind"`
	Message string        `json:"message"`
}

func okResult(tool string, data any) *mcp.CallToolResult {
	return textResult(mcpEnvelope{Schema: SchemaMCP, OK: true, Tool: tool, Data: data}, false)
}

func refusedResult(tool string, kind errkinds.Kind) *mcp.CallToolResult {
	return textResult(mcpEnvelope{Schema: SchemaMCP, Tool: tool, Error: &mcpError{Kind: kind, Message: kind.Message()}}, true)
}

func textResult(v any, isError bool) *mcp.CallToolResult {
	b, err := json.Marshal(v)
	if err != nil {
		b = []byte(`{"schema":"garra.mcp.v1","ok":false,"error":{"kind":"internal","message":"encode result"}}`)
		isError = true
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}, IsError: isError}
}
