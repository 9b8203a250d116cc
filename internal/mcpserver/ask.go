package mcpserver

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/strictargs"
)

// askTool is garra_ask: one question to the LLM, a garra.ask.v1 envelope.
// On stdio a model off the allowlist is invalid params; on the gateway it
// is refused (model_not_allowed), and the call spends the ask budget.
var askTool = &tool{
	name:          mcppolicy.ToolAsk,
	describe:      describeAsk,
	prepare:       prepareAsk,
	refused:       refusedAsk,
	redactFailure: true,
}

// The surfaces' texts of garra_ask's schema.
var (
	stdioAskTexts = llmTexts{
		message:      "The question or task for the model. Max 64 KiB; trimmed; must not be empty.",
		provider:     "LLM provider. Provider aliases from the server's config are accepted too.",
		model:        "Model id. The default is a low-cost model; pass a pricier one such as openrouter/auto explicitly for complex tasks.",
		timeout:      "Wall-clock limit for the provider call, in seconds.",
		systemPrompt: "Optional system prompt (max 8 KiB). A minimal default is used when absent.",
	}
	gatewayAskTexts = llmTexts{
		message:      "The question. Max 64 KiB; trimmed; must not be empty.",
		provider:     "LLM provider kind.",
		model:        "Model id; it must be allowed by the gateway's ask_allowed_models.",
		timeout:      "Wall-clock limit, in seconds.",
		systemPrompt: "Optional system prompt (max 8 KiB).",
	}
)

// askSchema is garra_ask's input schema for s's caller, with the defaults
// in force.
func askSchema(s *server) json.RawMessage {
	texts := gatewayAskTexts
	if s.local() {
		texts = stdioAskTexts
		if s.l.DefaultModel != config.DefaultModel {
			// Only the project's default is the low-cost guardrail.
			texts.model = "Model id. The default is this server's configured llm.model; pass another one explicitly to override it."
		}
	}
	return llmSchema(texts, mcppolicy.TimeoutBounds(s.c, s.l, mcppolicy.ToolAsk), s.l.DefaultProvider, s.l.DefaultModel)
}

func describeAsk(s *server) *mcp.Tool {
	t := &mcp.Tool{
		Name:        mcppolicy.ToolAsk,
		Title:       "Ask the LLM",
		Description: "Ask this Garra's LLM one question; spends the owner's provider key within a per-minute budget (garra.ask.v1).",
		InputSchema: askSchema(s),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(true)},
	}
	if s.local() {
		t.Title = "Ask an LLM"
		t.Description = "Send one question to an LLM provider (no tools, no history) and get a garra.ask.v1 JSON envelope: {schema, ok, answer, provider, model, latency_ms} or {schema, ok:false, error:{kind, message}}."
	}
	return t
}

func prepareAsk(_ context.Context, s *server, req *mcp.CallToolRequest) (*call, error) {
	var a askArgs
	if err := strictargs.Decode(arguments(req), &a); err != nil {
		return nil, err
	}
	ar, _, err := s.llmRequest(mcppolicy.ToolAsk, a)
	if err != nil {
		return nil, err
	}
	return &call{
		budget: s.o.Budgets.Ask, spent: errkinds.OverBudget, setting: "gateway.mcp_http.ask_budget_per_minute",
		quota: mcppolicy.ToolAsk, tokens: askBound(ar),
		provider: ar.Provider, model: ar.Model,
		run: func(ctx context.Context) (outcome, error) {
			env := s.o.Ask.Ask(ctx, ar)
			return outcome{envelope: func() string { return env.JSON() }, failure: env.Error}, nil
		},
	}, nil
}
