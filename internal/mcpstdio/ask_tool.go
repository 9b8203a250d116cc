package mcpstdio

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/strictargs"
)

const askToolName = "garra_ask"

// askInputSchema is written out rather than inferred so that tools/list is
// exactly the spec's schema, bounds included; the defaults are the ones in
// force (with the built-in configuration, the spec's).
func askInputSchema(d schemaDefaults) json.RawMessage {
	modelDoc := "Model id. The default is a low-cost model; pass a pricier one such as openrouter/auto explicitly for complex tasks."
	if d.Model != config.DefaultModel {
		modelDoc = "Model id. The default is this server's configured llm.model; pass another one explicitly to override it."
	}
	return json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "message": {"type": "string", "maxLength": 65536, "description": "The question or task for the model. Max 64 KiB; trimmed; must not be empty."},
    "provider": {"type": "string", "enum": ["ollama", "anthropic", "openai", "openrouter"], "default": %s, "description": "LLM provider. Provider aliases from the server's config are accepted too."},
    "model": {"type": "string", "default": %s, "description": %s},
    "timeout_secs": {"type": "integer", "minimum": 1, "maximum": 600, "default": %d, "description": "Wall-clock limit for the provider call, in seconds."},
    "system_prompt": {"type": "string", "maxLength": 8192, "description": "Optional system prompt (max 8 KiB). A minimal default is used when absent."}
  },
  "required": ["message"],
  "additionalProperties": false
}`, jsonString(d.Provider), jsonString(d.Model), jsonString(modelDoc), d.TimeoutSecs))
}

func askTool(d schemaDefaults) *mcp.Tool {
	return &mcp.Tool{
		Name:        askToolName,
		Title:       "Ask an LLM",
		Description: "Send one question to an LLM provider (no tools, no history) and get a garra.ask.v1 JSON envelope: {schema, ok, answer, provider, model, latency_ms} or {schema, ok:false, error:{kind, message}}.",
		InputSchema: askInputSchema(d),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(true)},
	}
}

// askArgs mirrors the schema; pointers tell "absent" from "zero".
type askArgs struct {
	Message      *string `json:"message"`
	Provider     *string `json:"provider"`
	Model        *string `json:"model"`
	TimeoutSecs  *int    `json:"timeout_secs"`
	SystemPrompt *string `json:"system_prompt"`
}

// askRequest turns raw arguments into a normalized ask.Request under the
// operator policy, or an error naming the field.
func (d *dispatcher) askRequest(raw json.RawMessage) (ask.Request, error) {
	var a askArgs
	if err := strictargs.Decode(raw, &a); err != nil {
		return ask.Request{}, err
	}
	return d.commonRequest(a)
}

// commonRequest applies the rules garra_ask and garra_agent share: message,
// provider (kinds and aliases), model (and the allowlist), system prompt and
// timeout_secs within garra_ask's bounds (nil = default).
func (d *dispatcher) commonRequest(a askArgs) (ask.Request, error) {
	if a.Message == nil {
		return ask.Request{}, fmt.Errorf("message: required")
	}
	req := ask.Request{Message: *a.Message, Provider: deref(a.Provider), Model: deref(a.Model), SystemPrompt: deref(a.SystemPrompt)}
	if a.Provider != nil && *a.Provider == "" {
		return req, fmt.Errorf("provider: must not be empty")
	}
	if a.Model != nil && *a.Model == "" {
		return req, fmt.Errorf("model: must not be empty")
	}
	timeout, err := mcppolicy.Timeout(mcppolicy.LocalUser(), d.limits(), mcppolicy.ToolAsk, a.TimeoutSecs)
	if err != nil {
		return req, err
	}
	req.TimeoutSecs = timeout
	if req, err = d.o.Asker.Normalize(req); err != nil {
		return req, err
	}
	if err := mcppolicy.CheckModel(mcppolicy.LocalUser(), d.limits(), req.Model); err != nil {
		return req, err
	}
	return req, nil
}

func (d *dispatcher) handleAsk(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	start := d.o.Now()
	req, err := d.askRequest(r.Params.Arguments)
	if err != nil {
		d.audit(ctx, r, askToolName, "invalid_params", errkinds.Usage, "", "", start)
		return nil, invalidParams(err)
	}
	env := d.o.Asker.Ask(ctx, req)
	var kind errkinds.Kind
	if env.Error != nil {
		kind = env.Error.Kind
	}
	d.audit(ctx, r, askToolName, outcome(env.OK), kind, req.Provider, req.Model, start)
	return envelopeResult(env.JSON(), !env.OK), nil
}

func envelopeResult(text string, isError bool) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, IsError: isError}
}

func invalidParams(err error) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
}

func outcome(ok bool) string {
	if ok {
		return "ok"
	}
	return "error"
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func ptr[T any](v T) *T { return &v }
