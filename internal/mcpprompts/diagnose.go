package mcpprompts

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DiagnosePrompt is diagnose_gateway: the gateway's own checklist, walked
// through the read-only tools and resources its caller has.
func DiagnosePrompt() *mcp.Prompt {
	return &mcp.Prompt{
		Name:  Diagnose,
		Title: "Diagnose this gateway",
		Description: "Walk the `garra config check`-style checks through the read-only tools and resources this caller has, " +
			"in order, and report each as OK or a problem with its fix.",
	}
}

// DiagnoseTools are the tools of the diagnosing caller the checklist
// depends on.
type DiagnoseTools struct {
	Status, PairStatus, ListChats, SendMessage bool
	// LLM is garra_ask or garra_agent.
	LLM bool
}

// DiagnoseResult is the checklist for caller. Steps for tools it cannot
// call say so instead of asking the model to call them.
func DiagnoseResult(caller string, has DiagnoseTools) *mcp.GetPromptResult {
	var b strings.Builder
	fmt.Fprintf(&b, "Diagnose this Garra gateway for the caller %q, the way `garra config check` would. Use only the read-only tools and resources below, in this order, and report every check as OK or PROBLEM with the fix. ", caller)
	b.WriteString("Do not call garra_send_message, garra_ask or garra_agent while diagnosing: they deliver messages or spend the owner's model budget.\n\n")

	step := 0
	next := func(format string, a ...any) {
		step++
		fmt.Fprintf(&b, "%d. "+format+"\n", append([]any{step}, a...)...)
	}
	next("Read the resource garra://policy. `tools` is what this caller may call now; a tool missing there is switched off by the operator (allow_send, allow_ask, allow_agent) or not in this caller's `tools` list — a setting, not an outage. `budgets` shows what is left this minute: 0 means calls get over_budget (or rate_limited for sends) until the window passes.")
	if has.Status {
		next("Call garra_status. Check that `version` is set; that every channel you expect reports `online: true` (telegram offline: the bot token variable named by channels.telegram.bot_token_env is unset, or the bot cannot reach Telegram); and that `conversations` is a number: the conversations this caller may see (0 is normal on a fresh gateway, and for an orchestrator whose `chats` list is empty; a store problem is logged by the gateway).")
	} else {
		next("garra_status is not available to this caller: skip the status checks and say so.")
	}
	if has.PairStatus {
		next("Call garra_pair_status. For each channel: `allowlist_size` 0 means nobody may talk to the bot yet; `pending_pairings` above 0 means someone waits for the owner's approval. It never shows pairing codes; do not ask for them.")
	} else {
		next("garra_pair_status is not available to this caller: skip the pairing checks.")
	}
	if has.ListChats {
		next("Call garra_list_chats (or read garra://chats). It lists the same conversations garra_status counted; an empty list for an orchestrator means its `chats` scope names none that exist yet. Do not open histories unless the user asks: they are private conversations.")
	}
	if has.SendMessage {
		next("garra_send_message is enabled: its destinations are channels.telegram.proactive_chat_ids. Do not send a test message; the policy's send budget is enough to confirm it is usable.")
	}
	if has.LLM {
		next("garra://policy lists `allowed_models`: a call naming another model gets model_not_allowed before anything leaves the machine. Empty ask_allowed_models means the project default model only.")
	}
	next("Summarize: what works, each problem with the config key that fixes it, and what this caller cannot check. Refusal kinds you may have seen and their fixes: send_disabled (gateway.mcp_http.allow_send), no_allowlist (channels.telegram.proactive_chat_ids), ask_disabled (allow_ask), agent_disabled (allow_agent), tool_not_allowed (the orchestrator's tools list), target_not_allowed and not_found (the orchestrator's chats scope, or the id is wrong), channel_offline (the channel is not running), over_budget / rate_limited for sends / too_many_requests for the per-IP limit (wait a minute), unavailable (the conversation store; see the gateway log).")
	return &mcp.GetPromptResult{
		Description: "Gateway diagnosis checklist for " + caller,
		Messages:    []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: b.String()}}},
	}
}
