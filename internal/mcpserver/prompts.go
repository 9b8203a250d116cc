package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/mcpprompts"
)

// addPrompts registers the prompts the caller is offered
// (mcppolicy.PromptVisible); one it lacks is the SDK's own "unknown
// prompt" (-32602).
func (s *server) addPrompts(srv *mcp.Server) {
	if mcppolicy.PromptVisible(s.c, s.l, mcppolicy.PromptOnboard) {
		endpoint := s.o.OnboardEndpoint
		if endpoint == "" {
			// The stdio server has no gateway of its own: a gateway's
			// default listen address.
			endpoint = "http://" + config.DefaultListen + "/mcp"
		}
		srv.AddPrompt(mcpprompts.OnboardPrompt(), func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			in, err := mcpprompts.ParseOnboard(req.Params.Arguments, endpoint)
			if err != nil {
				return nil, err
			}
			return mcpprompts.OnboardResult(in), nil
		})
	}
	if mcppolicy.PromptVisible(s.c, s.l, mcppolicy.PromptDiagnose) {
		has := func(t string) bool { return mcppolicy.CanCall(s.c, s.l, t) }
		tools := mcpprompts.DiagnoseTools{Status: has(mcppolicy.ToolStatus), PairStatus: has(mcppolicy.ToolPairStatus),
			ListChats: has(mcppolicy.ToolListChats), SendMessage: has(mcppolicy.ToolSendMessage),
			LLM: has(mcppolicy.ToolAsk) || has(mcppolicy.ToolAgent)}
		srv.AddPrompt(mcpprompts.DiagnosePrompt(), func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			if err := mcpprompts.CheckArguments(mcpprompts.DiagnosePrompt(), req.Params.Arguments); err != nil {
				return nil, err
			}
			return mcpprompts.DiagnoseResult(s.c.Name, tools), nil
		})
	}
	if mcppolicy.PromptVisible(s.c, s.l, mcppolicy.PromptDelegate) {
		t := mcppolicy.TimeoutBounds(s.c, s.l, mcppolicy.ToolAgent)
		b := mcpprompts.AgentBounds{Min: t.Min, Default: t.Default, Max: t.Cap}
		srv.AddPrompt(mcpprompts.DelegatePrompt(b), func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			in, err := mcpprompts.ParseDelegate(req.Params.Arguments, b)
			if err != nil {
				return nil, err
			}
			return mcpprompts.DelegateResult(in), nil
		})
	}
}
