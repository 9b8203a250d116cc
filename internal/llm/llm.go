// Package llm is Garra's one seam to language-model providers. A Provider
// takes a conversation (optionally with tool definitions) and returns either
// text or tool calls, whatever the wire format underneath: OpenAI-compatible
// chat completions (openai, openrouter, ollama) or Anthropic messages.
package llm

import (
	"context"
	"encoding/json"
	"fmt"
)

// Kind names a provider wire family and its default endpoint.
type Kind string

// The four provider kinds of the spec.
const (
	KindOllama     Kind = "ollama"
	KindAnthropic  Kind = "anthropic"
	KindOpenAI     Kind = "openai"
	KindOpenRouter Kind = "openrouter"
)

// Kinds lists every provider kind in the order the spec's enum gives them.
func Kinds() []Kind { return []Kind{KindOllama, KindAnthropic, KindOpenAI, KindOpenRouter} }

// ParseKind returns the Kind named s, or an error naming the accepted values.
func ParseKind(s string) (Kind, error) {
	for _, k := range Kinds() {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("unknown provider kind %q (want ollama, anthropic, openai or openrouter)", s)
}

// DefaultMaxTokens caps every response, per the spec.
const DefaultMaxTokens = 4096

// Role is who said a Message.
type Role string

// Message roles. The system prompt travels in Request.System, not as a Message.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one turn of a conversation.
//   - user: Content.
//   - assistant: Content and/or ToolCalls.
//   - tool: the result of ToolCallID in Content; IsError marks a failed call.
type Message struct {
	Role       Role
	Content    string
	ToolCalls  []ToolCall
	ToolCallID string
	IsError    bool
}

// ToolDef describes a tool the model may call. Parameters is a JSON Schema
// object.
type ToolDef struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ToolCall is the model asking for one tool invocation.
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage
}

// Request is one model turn.
type Request struct {
	Model     string
	System    string
	Messages  []Message
	Tools     []ToolDef
	MaxTokens int // 0 means DefaultMaxTokens
}

// Response is the model's reply: final Text, or ToolCalls to run (possibly
// with some Text alongside).
type Response struct {
	Text      string
	ToolCalls []ToolCall
	// Usage is the provider's token count (zero when it sent none);
	// ResponseModel the model it says answered.
	Usage         Usage
	ResponseModel string
}

// Usage is what one model turn cost, in tokens.
type Usage struct {
	InputTokens, OutputTokens int64
}

// Provider sends one Request to a model.
type Provider interface {
	// Kind is the wire family of this provider.
	Kind() Kind
	// Complete runs one model turn. Errors from the remote side are
	// *ProviderError; context errors are returned wrapped so that
	// errors.Is(err, context.DeadlineExceeded) holds.
	Complete(ctx context.Context, req Request) (*Response, error)
}

// ProviderError is a failure reported by (or while reaching) the provider.
// Message is raw and may contain secrets: redact before showing it.
type ProviderError struct {
	Kind       Kind
	StatusCode int // 0 when no HTTP status was received
	Message    string
	// Err is the underlying SDK or transport error, if any. It lets
	// errors.Is/As see through, e.g. to an SDK-internal timeout.
	Err error
}

// Unwrap returns the underlying cause (may be nil).
func (e *ProviderError) Unwrap() error { return e.Err }

func (e *ProviderError) Error() string {
	if e.StatusCode != 0 {
		return fmt.Sprintf("%s: HTTP %d: %s", e.Kind, e.StatusCode, e.Message)
	}
	return fmt.Sprintf("%s: %s", e.Kind, e.Message)
}
