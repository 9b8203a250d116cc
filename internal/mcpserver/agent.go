package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/agent"
	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/mcpprogress"
	"github.com/garraia/garra/internal/strictargs"
)

// agentTool is garra_agent: a task for the agent and its tools, a
// garra.agent.v1 envelope. The stdio user may name a working_dir inside
// the server's file roots; a gateway caller's workspace is its own and
// not its to pick. On the gateway the call spends the agent budget.
var agentTool = &tool{
	name:     mcppolicy.ToolAgent,
	describe: describeAgent,
	prepare:  prepareAgent,
	refused:  refusedAgent,
}

// The surfaces' texts of garra_agent's schema.
var (
	stdioAgentTexts = llmTexts{
		message:      "The task for the agent. Max 64 KiB.",
		provider:     "LLM provider. Provider aliases from the server's config are accepted too.",
		model:        "Model id. Pass openrouter/auto explicitly for complex tasks.",
		timeout:      "Wall-clock cap for the entire agent loop: every model round trip and every tool call.",
		systemPrompt: "Optional system prompt (max 8 KiB). The generated default names every registered tool.",
		workingDir:   "Directory for relative file paths and bash's current directory. Must exist and sit inside the server's file roots; it narrows them.",
	}
	gatewayAgentTexts = llmTexts{
		message:      "The task for the agent. Max 64 KiB.",
		provider:     "LLM provider kind.",
		model:        "Model id; it must be allowed by the gateway's ask_allowed_models.",
		timeout:      "Wall-clock cap for the whole agent run, LLM and tools.",
		systemPrompt: "Optional system prompt (max 8 KiB).",
	}
)

// agentSchema is garra_agent's input schema for s's caller, with the
// bounds and defaults in force.
func agentSchema(s *server) json.RawMessage {
	texts := gatewayAgentTexts
	if s.local() {
		texts = stdioAgentTexts
	}
	return llmSchema(texts, mcppolicy.TimeoutBounds(s.c, s.l, mcppolicy.ToolAgent), s.l.DefaultProvider, s.l.DefaultModel)
}

func describeAgent(s *server) *mcp.Tool {
	t := &mcp.Tool{
		Name:        mcppolicy.ToolAgent,
		Title:       "Delegate a task to the agent",
		Description: "Run a task with the Garra agent and its tools in this caller's own workspace; returns the answer and a summary of every tool used (garra.agent.v1).",
		InputSchema: agentSchema(s),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)},
	}
	if s.local() {
		t.Title = "Run the Garra agent"
		t.Description = "Run a task with the full Garra agent (file, git, web and, when sandboxed, shell tools) and get a garra.agent.v1 JSON envelope: " +
			"{schema, ok, answer, provider, model, latency_ms, session_id, tool_calls:[{name, duration_ms, success, summary}]}. One fresh session per call."
	}
	return t
}

func prepareAgent(_ context.Context, s *server, req *mcp.CallToolRequest) (*call, error) {
	var a agentArgs
	var err error
	if s.local() {
		err = strictargs.Decode(arguments(req), &a)
	} else {
		err = strictargs.Decode(arguments(req), &a.askArgs)
	}
	if err != nil {
		return nil, err
	}
	ar, timeout, err := s.llmRequest(mcppolicy.ToolAgent, a.askArgs)
	if err != nil {
		return nil, err
	}
	if a.WorkingDir != nil && *a.WorkingDir == "" {
		return nil, errors.New("working_dir: must not be empty")
	}
	c := agent.Call{Message: ar.Message, Provider: ar.Provider, Model: ar.Model, SystemPrompt: ar.SystemPrompt,
		WorkingDir: deref(a.WorkingDir), Timeout: time.Duration(timeout) * time.Second,
		// A client that sent a progressToken hears of each tool call.
		OnToolCall: mcpprogress.Reporter(req)}
	return &call{
		budget: s.o.Budgets.Agent, spent: errkinds.OverBudget, setting: "gateway.mcp_http.agent_budget_per_minute",
		quota: mcppolicy.ToolAgent, tokens: firstTurnBound(ar.SystemPrompt, ar.Message),
		provider: ar.Provider, model: ar.Model,
		run: func(ctx context.Context) (outcome, error) {
			env, err := s.o.Agent.RunAgent(ctx, c)
			if err != nil {
				return outcome{}, fmt.Errorf("working_dir: %w", err)
			}
			return outcome{envelope: func() string { return env.JSON() }, failure: env.Error}, nil
		},
	}, nil
}

func refusedAgent(e *ask.Error) *mcp.CallToolResult {
	env := agent.Envelope{ToolCalls: []agent.ToolCallSummary{}, Error: e}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: env.JSON()}}, IsError: true}
}
