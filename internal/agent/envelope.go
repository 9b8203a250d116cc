package agent

import (
	"encoding/json"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/errkinds"
)

// Schema is the garra.agent.v1 envelope's schema tag.
const Schema = "garra.agent.v1"

// ToolCallSummary is one tool call the agent made, as the host sees it.
// Summary is already redacted and truncated: it is never the full output.
type ToolCallSummary struct {
	Name       string `json:"name"`
	DurationMS int64  `json:"duration_ms"`
	Success    bool   `json:"success"`
	Summary    string `json:"summary"`
}

// Envelope is the garra.agent.v1 result: garra.ask.v1 plus session_id and
// tool_calls. On success it carries answer, provider, model and latency_ms;
// on failure error instead. session_id and tool_calls travel in both shapes,
// so the host sees what the agent executed before it stopped. Every string
// in it is already redacted.
type Envelope struct {
	OK        bool
	Answer    string
	Provider  string
	Model     string
	LatencyMS int64
	SessionID string
	ToolCalls []ToolCallSummary
	// Error is set when OK is false; it uses ask's stable kinds
	// (provider_error, timeout, usage).
	Error *ask.Error
}

// MarshalJSON writes the two shapes of the spec, field for field and in its
// order. tool_calls is always an array ([] when the agent called nothing).
func (e Envelope) MarshalJSON() ([]byte, error) {
	calls := e.ToolCalls
	if calls == nil {
		calls = []ToolCallSummary{}
	}
	if e.OK {
		return json.Marshal(struct {
			Schema    string            `json:"schema"`
			OK        bool              `json:"ok"`
			Answer    string            `json:"answer"`
			Provider  string            `json:"provider"`
			Model     string            `json:"model"`
			LatencyMS int64             `json:"latency_ms"`
			SessionID string            `json:"session_id"`
			ToolCalls []ToolCallSummary `json:"tool_calls"`
		}{Schema, true, e.Answer, e.Provider, e.Model, e.LatencyMS, e.SessionID, calls})
	}
	errPart := e.Error
	if errPart == nil {
		errPart = &ask.Error{Kind: errkinds.ProviderError, Message: "unknown failure"}
	}
	return json.Marshal(struct {
		Schema    string            `json:"schema"`
		OK        bool              `json:"ok"`
		Error     *ask.Error        `json:"error"`
		SessionID string            `json:"session_id"`
		ToolCalls []ToolCallSummary `json:"tool_calls"`
	}{Schema, false, errPart, e.SessionID, calls})
}

// JSON is the envelope as a string, as it travels in a text content block.
func (e Envelope) JSON() string {
	b, err := json.Marshal(e)
	if err != nil { // cannot happen: only strings, bools and ints
		return `{"schema":"garra.agent.v1","ok":false,"error":{"kind":"provider_error","message":"encode envelope"},"session_id":"","tool_calls":[]}`
	}
	return string(b)
}
