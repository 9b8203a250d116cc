package gateway

import (
	"context"
	"net"
	"slices"

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
	has := func(t string) bool { return slices.Contains(vis, t) }
	tools := mcpprompts.DiagnoseTools{Status: has(mcppolicy.ToolStatus), PairStatus: has(mcppolicy.ToolPairStatus),
		ListChats: has(mcppolicy.ToolListChats), SendMessage: has(mcppolicy.ToolSendMessage), LLM: has(mcppolicy.ToolAsk) || has(mcppolicy.ToolAgent)}
	s.AddPrompt(mcpprompts.DiagnosePrompt(), func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		if err := mcpprompts.CheckArguments(mcpprompts.DiagnosePrompt(), req.Params.Arguments); err != nil {
			return nil, err
		}
		return mcpprompts.DiagnoseResult(c.Name, tools), nil
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
