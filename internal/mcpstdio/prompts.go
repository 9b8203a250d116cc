package mcpstdio

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/mcpprompts"
)

// addPrompts registers the stdio prompts:
//
//   - onboard_orchestrator, always: it only renders configuration text (the
//     GarraServer entry and the client config), which is as useful to an
//     operator preparing a gateway from a laptop's Claude Desktop as it is
//     on the gateway. Its default endpoint is the gateway's default listen
//     address, since this server has no gateway of its own.
//   - delegate_task, only when garra_agent is registered: a prompt that
//     produces a call the server would answer "unknown tool" is noise.
//   - diagnose_gateway is not offered here: its checks go through the
//     gateway's read tools (garra_status, garra_pair_status, …), which this
//     server does not have.
func (d *dispatcher) addPrompts(s *mcp.Server) {
	s.AddPrompt(mcpprompts.OnboardPrompt(), func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		in, err := mcpprompts.ParseOnboard(req.Params.Arguments, "http://"+config.DefaultListen+"/mcp")
		if err != nil {
			return nil, err
		}
		return mcpprompts.OnboardResult(in), nil
	})
	if d.agentEnabled() {
		t := mcppolicy.TimeoutBounds(mcppolicy.LocalUser(), d.limits(), mcppolicy.ToolAgent)
		b := mcpprompts.AgentBounds{Min: t.Min, Default: t.Default, Max: t.Cap}
		s.AddPrompt(mcpprompts.DelegatePrompt(b), func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			in, err := mcpprompts.ParseDelegate(req.Params.Arguments, b)
			if err != nil {
				return nil, err
			}
			return mcpprompts.DelegateResult(in), nil
		})
	}
}
