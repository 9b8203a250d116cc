package mcpserver

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/ask"
)

// SchemaMCP tags the envelope of every gateway tool but garra_ask and
// garra_agent.
const SchemaMCP = "garra.mcp.v1"

// mcpEnvelope is garra.mcp.v1: {schema, ok, tool, data} on success,
// {schema, ok:false, tool, error:{kind, message}} on a refusal.
type mcpEnvelope struct {
	Schema string     `json:"schema"`
	OK     bool       `json:"ok"`
	Tool   string     `json:"tool"`
	Data   any        `json:"data,omitempty"`
	Error  *ask.Error `json:"error,omitempty"`
}

// okOutcome is a successful run of tool with data.
func okOutcome(tool string, data any) outcome {
	return outcome{envelope: func() string { return encode(mcpEnvelope{Schema: SchemaMCP, OK: true, Tool: tool, Data: data}) }}
}

// refusedMCP is the garra.mcp.v1 refusal of tool.
func refusedMCP(tool string) func(*ask.Error) *mcp.CallToolResult {
	return func(e *ask.Error) *mcp.CallToolResult {
		text := encode(mcpEnvelope{Schema: SchemaMCP, Tool: tool, Error: e})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: true}
	}
}

// encode is v as JSON; a value that cannot be encoded (it never should)
// becomes an internal error envelope rather than a broken reply.
func encode(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return `{"schema":"garra.mcp.v1","ok":false,"error":{"kind":"internal","message":"encode result"}}`
	}
	return string(b)
}
