package gateway

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/mcpprompts"
)

// addPrompts registers c's prompts. onboard_orchestrator and
// diagnose_gateway are offered to every authenticated caller (they render
// text and read nothing); delegate_task only to a caller that can call
// garra_agent, so no caller is handed a request it would see refused.
// Prompts are registered per caller, so a prompt it lacks is the SDK's own
// "unknown prompt" (-32602).
func (g *policy) addPrompts(s *mcp.Server, c mcppolicy.Caller) {
	vis := mcppolicy.Visible(c, g.limits)
	s.AddPrompt(mcpprompts.OnboardPrompt(), func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		in, err := mcpprompts.ParseOnboard(req.Params.Arguments, g.endpoint())
		if err != nil {
			return nil, err
		}
		return mcpprompts.OnboardResult(in), nil
	})
	s.AddPrompt(diagnosePrompt(), func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if err := mcpprompts.CheckArguments(diagnosePrompt(), req.Params.Arguments); err != nil {
			return nil, err
		}
		return diagnoseResult(c.Name, vis), nil
	})
	if slices.Contains(vis, mcppolicy.ToolAgent) {
		m := g.cfg.Gateway.MCPHTTP
		b := mcpprompts.AgentBounds{Min: config.MinAgentMaxSeconds, Default: m.AgentMaxSeconds, Max: m.AgentMaxSeconds}
		s.AddPrompt(mcpprompts.DelegatePrompt(b), func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			in, err := mcpprompts.ParseDelegate(req.Params.Arguments, b)
			if err != nil {
				return nil, err
			}
			return mcpprompts.DelegateResult(in), nil
		})
	}
}

// endpoint is the default onboarding URL: this gateway's listen address,
// with an unspecified host (0.0.0.0, ::) shown as loopback.
func (g *policy) endpoint() string {
	host, port, err := net.SplitHostPort(g.cfg.Gateway.Listen)
	if err != nil {
		return "http://" + config.DefaultListen + "/mcp"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/mcp"
}

func diagnosePrompt() *mcp.Prompt {
	return &mcp.Prompt{
		Name:  mcpprompts.Diagnose,
		Title: "Diagnose this gateway",
		Description: "Walk the `garra config check`-style checks through the read-only tools and resources this caller has, " +
			"in order, and report each as OK or a problem with its fix.",
	}
}

// diagnoseResult is the checklist for a caller that sees vis. Steps for
// tools it cannot call say so instead of asking the model to call them.
func diagnoseResult(caller string, vis []string) *mcp.GetPromptResult {
	has := func(t string) bool { return slices.Contains(vis, t) }
	var b strings.Builder
	fmt.Fprintf(&b, "Diagnose this Garra gateway for the caller %q, the way `garra config check` would. Use only the read-only tools and resources below, in this order, and report every check as OK or PROBLEM with the fix. ", caller)
	b.WriteString("Do not call garra_send_message, garra_ask or garra_agent while diagnosing: they deliver messages or spend the owner's model budget.\n\n")

	step := 0
	next := func(format string, a ...any) {
		step++
		fmt.Fprintf(&b, "%d. "+format+"\n", append([]any{step}, a...)...)
	}
	next("Read the resource garra://policy. `tools` is what this caller may call now; a tool missing there is switched off by the operator (allow_send, allow_ask, allow_agent) or not in this caller's `tools` list — a setting, not an outage. `budgets` shows what is left this minute: 0 means calls get over_budget (or rate_limited for sends) until the window passes.")
	if has(mcppolicy.ToolStatus) {
		next("Call garra_status. Check that `version` is set; that every channel you expect reports `online: true` (telegram offline: the bot token variable named by channels.telegram.bot_token_env is unset, or the bot cannot reach Telegram); and that `conversations` is a number: the conversations this caller may see (0 is normal on a fresh gateway, and for an orchestrator whose `chats` list is empty; a store problem is logged by the gateway).")
	} else {
		next("garra_status is not available to this caller: skip the status checks and say so.")
	}
	if has(mcppolicy.ToolPairStatus) {
		next("Call garra_pair_status. For each channel: `allowlist_size` 0 means nobody may talk to the bot yet; `pending_pairings` above 0 means someone waits for the owner's approval. It never shows pairing codes; do not ask for them.")
	} else {
		next("garra_pair_status is not available to this caller: skip the pairing checks.")
	}
	if has(mcppolicy.ToolListChats) {
		next("Call garra_list_chats (or read garra://chats). It lists the same conversations garra_status counted; an empty list for an orchestrator means its `chats` scope names none that exist yet. Do not open histories unless the user asks: they are private conversations.")
	}
	if has(mcppolicy.ToolSendMessage) {
		next("garra_send_message is enabled: its destinations are channels.telegram.proactive_chat_ids. Do not send a test message; the policy's send budget is enough to confirm it is usable.")
	}
	if has(mcppolicy.ToolAsk) || has(mcppolicy.ToolAgent) {
		next("garra://policy lists `allowed_models`: a call naming another model gets model_not_allowed before anything leaves the machine. Empty ask_allowed_models means the project default model only.")
	}
	next("Summarize: what works, each problem with the config key that fixes it, and what this caller cannot check. Refusal kinds you may have seen and their fixes: send_disabled (gateway.mcp_http.allow_send), no_allowlist (channels.telegram.proactive_chat_ids), ask_disabled (allow_ask), agent_disabled (allow_agent), tool_not_allowed (the orchestrator's tools list), target_not_allowed and not_found (the orchestrator's chats scope, or the id is wrong), channel_offline (the channel is not running), over_budget / rate_limited for sends / too_many_requests for the per-IP limit (wait a minute), unavailable (the conversation store; see the gateway log).")
	return &mcp.GetPromptResult{
		Description: "Gateway diagnosis checklist for " + caller,
		Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: b.String()}}},
	}
}
