package mcpstdio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/agent"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/mcpprogress"
	"github.com/garraia/garra/internal/strictargs"
)

const agentToolName = "garra_agent"

// Bounds of garra_agent's timeout_secs (spec: [5, 1800], default 300).
const (
	agentMinTimeoutSecs     = 5
	agentDefaultTimeoutSecs = 300
	agentMaxTimeoutSecs     = 1800
)

// AgentRunner runs one garra_agent call. It is built outside this package
// (agent.LocalRunner) so that the dispatcher constructs no tool. An error
// means the working_dir was refused; everything else is in the envelope.
type AgentRunner interface {
	RunAgent(ctx context.Context, c agent.Call) (agent.Envelope, error)
}

// agentInputSchema is garra_agent's schema, with the defaults in force.
func agentInputSchema(d schemaDefaults) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "message": {"type": "string", "maxLength": 65536, "description": "The task for the agent. Max 64 KiB."},
    "provider": {"type": "string", "enum": ["ollama", "anthropic", "openai", "openrouter"], "default": %s, "description": "LLM provider. Provider aliases from the server's config are accepted too."},
    "model": {"type": "string", "default": %s, "description": "Model id. Pass openrouter/auto explicitly for complex tasks."},
    "timeout_secs": {"type": "integer", "minimum": 5, "maximum": 1800, "default": %d, "description": "Wall-clock cap for the entire agent loop: every model round trip and every tool call."},
    "system_prompt": {"type": "string", "maxLength": 8192, "description": "Optional system prompt (max 8 KiB). The generated default names every registered tool."},
    "working_dir": {"type": "string", "description": "Directory for relative file paths and bash's current directory. Must exist and sit inside the server's file roots; it narrows them."}
  },
  "required": ["message"],
  "additionalProperties": false
}`, jsonString(d.Provider), jsonString(d.Model), d.TimeoutSecs))
}

func agentTool(d schemaDefaults) *mcp.Tool {
	return &mcp.Tool{
		Name:  agentToolName,
		Title: "Run the Garra agent",
		Description: "Run a task with the full Garra agent (file, git, web and, when sandboxed, shell tools) and get a garra.agent.v1 JSON envelope: " +
			"{schema, ok, answer, provider, model, latency_ms, session_id, tool_calls:[{name, duration_ms, success, summary}]}. One fresh session per call.",
		InputSchema: agentInputSchema(d),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
	}
}

type agentArgs struct {
	askArgs
	WorkingDir *string `json:"working_dir"`
}

// agentCall validates garra_agent's arguments under the operator policy.
func (d *dispatcher) agentCall(raw json.RawMessage) (agent.Call, error) {
	var a agentArgs
	if err := strictargs.Decode(raw, &a); err != nil {
		return agent.Call{}, err
	}
	timeout, err := d.o.Policy.EffectiveTimeout(deref(a.TimeoutSecs), agentMinTimeoutSecs, agentDefaultTimeoutSecs, agentMaxTimeoutSecs, a.TimeoutSecs != nil)
	if err != nil {
		return agent.Call{}, err
	}
	// The common fields share garra_ask's rules; the timeout is checked
	// above against the agent's own bounds, so it is neutral here.
	a.TimeoutSecs = nil
	req, err := d.commonRequest(a.askArgs)
	if err != nil {
		return agent.Call{}, err
	}
	if a.WorkingDir != nil && *a.WorkingDir == "" {
		return agent.Call{}, errors.New("working_dir: must not be empty")
	}
	return agent.Call{
		Message:      req.Message,
		Provider:     req.Provider,
		Model:        req.Model,
		SystemPrompt: req.SystemPrompt,
		WorkingDir:   deref(a.WorkingDir),
		Timeout:      time.Duration(timeout) * time.Second,
	}, nil
}

func (d *dispatcher) handleAgent(ctx context.Context, r *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	start := d.o.Now()
	call, err := d.agentCall(r.Params.Arguments)
	if err != nil {
		d.audit(ctx, r, agentToolName, "invalid_params", errkinds.Usage, "", "", start)
		return nil, invalidParams(err)
	}
	call.OnToolCall = mcpprogress.Reporter(r)
	env, err := d.o.Agent.RunAgent(ctx, call)
	if err != nil {
		d.audit(ctx, r, agentToolName, "invalid_params", errkinds.Usage, call.Provider, call.Model, start)
		return nil, invalidParams(fmt.Errorf("working_dir: %w", err))
	}
	var kind errkinds.Kind
	if env.Error != nil {
		kind = env.Error.Kind
	}
	d.audit(ctx, r, agentToolName, outcome(env.OK), kind, call.Provider, call.Model, start)
	return envelopeResult(env.JSON(), !env.OK), nil
}
