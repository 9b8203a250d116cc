package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/strictargs"
)

// Bounds of garra_send_message's arguments, stated here once: the schema
// shows them and prepareSend enforces them.
const (
	maxChatIDLen = 32
	// maxSendChars is Telegram's limit on a message's text.
	maxSendChars = 4096
)

// sendSchema is garra_send_message's input schema, written out for the
// reasons llmSchema gives.
var sendSchema = json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "channel": {"type": "string", "enum": ["telegram"], "default": "telegram", "description": "The channel to send on. Only telegram has approved destinations."},
    "chat_id": {"type": "string", "maxLength": %d, "description": "The destination chat id; it must be listed in the operator's proactive_chat_ids."},
    "text": {"type": "string", "maxLength": %d, "description": "The message text (Telegram's limit, %d characters)."},
    "dry_run": {"type": "boolean", "default": false, "description": "Check the call and return the exact text that would be sent (redacted) and the resolved destination, without sending or spending the send budget."}
  },
  "required": ["chat_id", "text"],
  "additionalProperties": false
}`, maxChatIDLen, maxSendChars, maxSendChars))

type sendArgs struct {
	Channel *string `json:"channel"`
	ChatID  *string `json:"chat_id"`
	Text    *string `json:"text"`
	DryRun  *bool   `json:"dry_run"`
}

// sendTool is garra_send_message, the gateway's one write: to a
// destination the operator approved and the caller's scope admits, on a
// channel that is running, within the shared send budget (a dry run
// checks all of it and spends nothing). A refusal never echoes the chat
// id, and a delivery failure never forwards the channel's own text.
var sendTool = &tool{
	name: mcppolicy.ToolSendMessage,
	describe: func(*server) *mcp.Tool {
		return &mcp.Tool{Name: mcppolicy.ToolSendMessage, Title: "Send a message", InputSchema: sendSchema,
			Description: "Send a message on Telegram to a destination the operator approved in advance. Shares one budget of 5 sends per minute across the gateway (garra.mcp.v1).",
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}}
	},
	prepare: prepareSend,
	refused: refusedMCP(mcppolicy.ToolSendMessage),
}

func prepareSend(_ context.Context, s *server, req *mcp.CallToolRequest) (*call, error) {
	var a sendArgs
	if err := strictargs.Decode(arguments(req), &a); err != nil {
		return nil, err
	}
	channel := deref(a.Channel)
	if channel == "" {
		channel = chat.ChannelTelegram
	}
	switch {
	case a.ChatID == nil || strings.TrimSpace(*a.ChatID) == "":
		return nil, errors.New("chat_id: required")
	case a.Text == nil || strings.TrimSpace(*a.Text) == "":
		return nil, errors.New("text: required and not empty")
	case utf8.RuneCountInString(*a.ChatID) > maxChatIDLen:
		return nil, fmt.Errorf("chat_id: at most %d characters", maxChatIDLen)
	case utf8.RuneCountInString(*a.Text) > maxSendChars:
		return nil, fmt.Errorf("text: at most %d characters", maxSendChars)
	}
	ch := s.o.Chats
	chatID := strings.TrimSpace(*a.ChatID)
	if kind := mcppolicy.SendTargetRefusal(s.c, channel, chatID, ch.Approved); kind != "" {
		return nil, &mcppolicy.Refused{Kind: kind}
	}
	if !ch.Sender.Online(channel) {
		return nil, &mcppolicy.Refused{Kind: errkinds.ChannelOffline}
	}
	text := s.o.Redactor.String(*a.Text)
	if deref(a.DryRun) {
		// Every check above ran; nothing is sent and the budget is only
		// read. Echoing the destination is safe here: it is approved and
		// in the caller's scope, and the caller named it.
		return &call{run: func(context.Context) (outcome, error) {
			out := okOutcome(mcppolicy.ToolSendMessage, map[string]any{
				"dry_run": true, "delivered": false, "channel": channel, "chat_id": chatID,
				"chat": chat.ConvID(channel, chatID), "text": text, "send_budget_remaining": s.o.Budgets.Send.Remaining(),
			})
			out.dryRun = true
			return out, nil
		}}, nil
	}
	return &call{budget: s.o.Budgets.Send, spent: errkinds.RateLimited, quota: mcppolicy.ToolSendMessage, run: func(ctx context.Context) (outcome, error) {
		if err := ch.Sender.Send(ctx, channel, chatID, text); err != nil {
			// The channel's own text stays in the log.
			s.o.Logger.Warn("send failed", "caller", s.c.Name, "channel", channel, "error", err)
			return outcome{}, &mcppolicy.Refused{Kind: errkinds.DeliveryFailed}
		}
		return okOutcome(mcppolicy.ToolSendMessage, map[string]any{"delivered": true, "channel": channel}), nil
	}}, nil
}
