// Package mcpprogress reports an agent run to the MCP client that asked
// for progress (a progressToken in the call's _meta): one
// notifications/progress per tool call, progress = the call's step (1, 2,
// …), message = the tool's name. The total is left out, as the number of
// calls is the model's choice and not known in advance. Arguments and
// outputs are never sent: they may carry secrets.
//
// Both MCP surfaces, the stdio server and the gateway, report through it.
// On stdio the notifications go out between the request and its result;
// over HTTP they reach the client only when the response is an event
// stream, which the gateway chooses for such a call.
package mcpprogress

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/agent"
)

// Reporter returns the observer that reports req's agent run, or nil when
// req carries no progress token (nothing is sent then). The observer must
// be called with the handler's context or one derived from it: the SDK
// finds the request a notification belongs to, and so the HTTP stream to
// write it on, through that context.
func Reporter(req *mcp.CallToolRequest) agent.ToolObserver {
	if req == nil || req.Session == nil || req.Params == nil {
		return nil
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	session := req.Session
	return func(ctx context.Context, step int, tool string) {
		// Best effort: a client gone away loses its result as well, and
		// the run must not fail because a notice did not arrive.
		_ = session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
			ProgressToken: token,
			Progress:      float64(step),
			Message:       tool,
		})
	}
}
