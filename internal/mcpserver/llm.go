package mcpserver

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/llm"
	"github.com/garraia/garra/internal/mcppolicy"
)

// askArgs is garra_ask's input, and garra_agent's on the gateway; pointers
// tell "absent" from "zero".
type askArgs struct {
	Message      *string `json:"message"`
	Provider     *string `json:"provider"`
	Model        *string `json:"model"`
	TimeoutSecs  *int    `json:"timeout_secs"`
	SystemPrompt *string `json:"system_prompt"`
}

// agentArgs is garra_agent's input on stdio, where the local user may
// narrow the file roots to a working directory.
type agentArgs struct {
	askArgs
	WorkingDir *string `json:"working_dir"`
}

// llmRequest validates what garra_ask and garra_agent share, for tool:
// timeout_secs within the caller's bounds (returned apart: garra_agent's
// are not garra_ask's), message, provider (aliases on stdio only), model,
// then the core's own rules and the model policy.
func (s *server) llmRequest(tool string, a askArgs) (ask.Request, int, error) {
	timeout, err := mcppolicy.Timeout(s.c, s.l, tool, a.TimeoutSecs)
	if err != nil {
		return ask.Request{}, 0, err
	}
	if a.Message == nil {
		return ask.Request{}, 0, errors.New("message: required")
	}
	req := ask.Request{Message: *a.Message, Provider: deref(a.Provider), Model: deref(a.Model), SystemPrompt: deref(a.SystemPrompt)}
	switch {
	case a.Provider == nil:
	case mcppolicy.AliasesAllowed(s.c) && *a.Provider == "":
		return req, 0, errors.New("provider: must not be empty")
	case !mcppolicy.AliasesAllowed(s.c):
		if _, err := llm.ParseKind(*a.Provider); err != nil {
			return req, 0, fmt.Errorf("provider: %q is not one of ollama, anthropic, openai, openrouter", *a.Provider)
		}
	}
	if a.Model != nil && *a.Model == "" {
		return req, 0, errors.New("model: must not be empty")
	}
	if tool == mcppolicy.ToolAsk {
		req.TimeoutSecs = timeout
	}
	if req, err = s.o.Ask.Normalize(req); err != nil {
		return req, 0, err
	}
	if err := mcppolicy.CheckModel(s.c, s.l, req.Model); err != nil {
		return req, 0, err
	}
	return req, timeout, nil
}

// firstTurnBound is what the first model call of a garra_ask or
// garra_agent call can cost at least: its message and system prompt under
// the output cap. A call whose caller's token quota cannot hold it is
// refused before anything is spent; later turns, and what the core adds
// to the prompt, are reserved as each model call is made.
func firstTurnBound(system, message string) int64 {
	return llm.Bound(llm.Request{System: system, Messages: []llm.Message{{Role: llm.RoleUser, Content: message}}})
}

// askBound is exactly the bound of garra_ask's one model call, the
// core's default prompt included, so that the call reserves its tokens
// once, before anything is spent.
func askBound(ar ask.Request) int64 {
	system := ar.SystemPrompt
	if system == "" {
		system = ask.DefaultSystemPrompt
	}
	return llm.Bound(llm.Request{System: system, Messages: ask.Conversation(nil, ar.Message)})
}

// llmTexts are the descriptions an LLM tool's schema gives its properties
// on one surface.
type llmTexts struct {
	message, provider, model, timeout, systemPrompt string
	// workingDir, when set, adds the working_dir property.
	workingDir string
}

// llmSchema is the input schema of garra_ask and garra_agent. It is
// written out rather than derived from askArgs: the specs fix bounds,
// enums and defaults that struct tags cannot carry, the defaults are the
// ones in force, and jsonschema-go orders keys (description first, type
// after, pointers as ["null", …]) otherwise than the schema every client
// has seen. TestSchemasMatchInputTypes keeps the properties and askArgs
// (agentArgs) in step. Every hand-written schema of the package is laid
// out like this one (the specs' layout), and takes its bounds from the
// constants its argument checks enforce.
func llmSchema(t llmTexts, b mcppolicy.Timeouts, provider, model string) json.RawMessage {
	workingDir := ""
	if t.workingDir != "" {
		workingDir = fmt.Sprintf(",\n    \"working_dir\": {\"type\": \"string\", \"description\": %s}", jsonString(t.workingDir))
	}
	return json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "message": {"type": "string", "maxLength": %d, "description": %s},
    "provider": {"type": "string", "enum": ["ollama", "anthropic", "openai", "openrouter"], "default": %s, "description": %s},
    "model": {"type": "string", "default": %s, "description": %s},
    "timeout_secs": {"type": "integer", "minimum": %d, "maximum": %d, "default": %d, "description": %s},
    "system_prompt": {"type": "string", "maxLength": %d, "description": %s}%s
  },
  "required": ["message"],
  "additionalProperties": false
}`, ask.MaxMessageBytes, jsonString(t.message),
		jsonString(provider), jsonString(t.provider),
		jsonString(model), jsonString(t.model),
		b.Min, b.Max, b.Default, jsonString(t.timeout),
		ask.MaxSystemPromptBytes, jsonString(t.systemPrompt), workingDir))
}

// jsonString is s as a JSON string literal, for the schema templates.
func jsonString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}
