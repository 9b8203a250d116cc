package mcpprompts

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MaxGoalBytes is garra_agent's message limit (64 KiB).
const MaxGoalBytes = 64 << 10

// AgentBounds are the timeout_secs bounds of the garra_agent the prompt
// targets: the schema's on stdio under the operator cap, agent_max_seconds
// on the gateway.
type AgentBounds struct {
	Min, Default, Max int
}

// DelegatePrompt describes delegate_task.
func DelegatePrompt(b AgentBounds) *mcp.Prompt {
	return &mcp.Prompt{
		Name:        Delegate,
		Title:       "Delegate a task to the Garra agent",
		Description: "A well-formed garra_agent call for a goal, with guidance on reading its garra.agent.v1 envelope.",
		Arguments: []*mcp.PromptArgument{
			{Name: "goal", Title: "Goal", Required: true,
				Description: "The task, self-contained: the agent does not see this conversation. At most 64 KiB."},
			{Name: "timeout", Title: "Timeout (seconds)",
				Description: fmt.Sprintf("Wall-clock cap for the whole run, %d to %d. Default %d.", b.Min, b.Max, b.Default)},
		},
	}
}

// DelegateInput is delegate_task's arguments, checked.
type DelegateInput struct {
	Goal        string
	TimeoutSecs int
}

// ParseDelegate checks delegate_task's arguments against b.
func ParseDelegate(args map[string]string, b AgentBounds) (DelegateInput, error) {
	if err := CheckArguments(DelegatePrompt(b), args); err != nil {
		return DelegateInput{}, err
	}
	in := DelegateInput{Goal: strings.TrimSpace(args["goal"]), TimeoutSecs: b.Default}
	if len(in.Goal) > MaxGoalBytes {
		return in, InvalidArgument("goal", "at most %d bytes (garra_agent's message limit)", MaxGoalBytes)
	}
	if raw := strings.TrimSpace(args["timeout"]); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < b.Min || n > b.Max {
			return in, InvalidArgument("timeout", "%q must be a whole number of seconds in [%d, %d]", raw, b.Min, b.Max)
		}
		in.TimeoutSecs = n
	}
	return in, nil
}

// DelegateCall is the tools/call params the prompt asks for.
func DelegateCall(in DelegateInput) map[string]any {
	return map[string]any{
		"name":      "garra_agent",
		"arguments": map[string]any{"message": in.Goal, "timeout_secs": in.TimeoutSecs},
	}
}

// DelegateResult renders delegate_task.
func DelegateResult(in DelegateInput) *mcp.GetPromptResult {
	var b strings.Builder
	b.WriteString("Delegate the task below to the Garra agent with one call to the garra_agent tool, exactly as written (the message is the whole task: the agent sees nothing of this conversation, so do not shorten it or refer to earlier turns):\n\n")
	b.WriteString("```json\n" + jsonBlock(DelegateCall(in)) + "\n```\n\n")
	fmt.Fprintf(&b, "The run has %d seconds of wall clock for every model turn and tool call together; the agent works only inside its own workspace (file, git and web tools; bash only where a sandbox allows it).\n\n", in.TimeoutSecs)
	b.WriteString("The result is a garra.agent.v1 envelope (JSON text):\n\n")
	b.WriteString("- `ok: true`: report `answer`, then summarize `tool_calls` (name, success, summary) so the user sees what was done.\n")
	b.WriteString("- `ok: false`: `error.kind` says why, and `tool_calls` still shows what ran before it stopped. `timeout`: the goal needs more time or smaller steps; offer to split it. `provider_error`: the model provider failed; retry once later. `over_budget`: the per-minute budget is spent; wait a minute. `model_not_allowed`, `agent_disabled`, `tool_not_allowed`: an operator setting; do not retry, tell the user.\n")
	b.WriteString("- A JSON-RPC invalid params error names the argument to fix.\n\n")
	b.WriteString("Do not call garra_agent again for the same goal without the user's go-ahead: every run spends the owner's model budget and may change files.")
	return userText("A garra_agent call for the goal", b.String())
}
