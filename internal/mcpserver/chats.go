package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/strictargs"
)

// The gateway's read tools: its state and the conversations the caller's
// chat scope admits, in garra.mcp.v1 envelopes. Their schemas are written
// out for the reasons llmSchema gives.

var (
	noArgsSchema = json.RawMessage(`{
  "type": "object",
  "properties": {},
  "additionalProperties": false
}`)
	listChatsSchema = json.RawMessage(`{
  "type": "object",
  "properties": {
    "channel": {"type": "string", "enum": ["telegram", "web"], "description": "Only conversations of this channel."}
  },
  "additionalProperties": false
}`)
)

type noArgs struct{}

type listChatsArgs struct {
	Channel *string `json:"channel"`
}

type readHistoryArgs struct {
	Chat  *string `json:"chat"`
	Limit *int    `json:"limit"`
}

// maxChatHandleLen bounds garra_read_history's chat handle, in the schema
// and in the check alike.
const maxChatHandleLen = 256

// readHistorySchema bounds limit by max_history_messages.
func readHistorySchema(maxHistory int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "chat": {"type": "string", "maxLength": %d, "description": "A conversation handle: the chat field of a garra_list_chats row."},
    "limit": {"type": "integer", "minimum": 1, "maximum": %d, "default": %d, "description": "How many of the most recent messages to return."}
  },
  "required": ["chat"],
  "additionalProperties": false
}`, maxChatHandleLen, maxHistory, maxHistory))
}

var statusTool = &tool{
	name: mcppolicy.ToolStatus,
	describe: func(*server) *mcp.Tool {
		return &mcp.Tool{Name: mcppolicy.ToolStatus, Title: "Gateway status", InputSchema: noArgsSchema,
			Description: "Version, uptime, channels and how many conversations this Garra holds (garra.mcp.v1).",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	},
	prepare: func(_ context.Context, s *server, req *mcp.CallToolRequest) (*call, error) {
		if err := strictargs.Decode(arguments(req), &noArgs{}); err != nil {
			return nil, err
		}
		return &call{run: func(ctx context.Context) (outcome, error) {
			return okOutcome(mcppolicy.ToolStatus, s.statusData(ctx)), nil
		}}, nil
	},
	refused: refusedMCP(mcppolicy.ToolStatus),
}

var listChatsTool = &tool{
	name: mcppolicy.ToolListChats,
	describe: func(*server) *mcp.Tool {
		return &mcp.Tool{Name: mcppolicy.ToolListChats, Title: "List conversations", InputSchema: listChatsSchema,
			Description: "Live conversations, newest first, optionally filtered by channel. Each row's chat field is the argument to garra_read_history (garra.mcp.v1).",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	},
	prepare: func(_ context.Context, s *server, req *mcp.CallToolRequest) (*call, error) {
		var a listChatsArgs
		if err := strictargs.Decode(arguments(req), &a); err != nil {
			return nil, err
		}
		channel := deref(a.Channel)
		if channel != "" && channel != chat.ChannelTelegram && channel != chat.ChannelWeb {
			return nil, errors.New("channel: must be telegram or web")
		}
		return &call{run: func(ctx context.Context) (outcome, error) {
			rows, err := s.scopedChats(ctx, channel)
			if err != nil {
				return outcome{}, &mcppolicy.Refused{Kind: errkinds.Unavailable}
			}
			return okOutcome(mcppolicy.ToolListChats, map[string]any{"chats": rows}), nil
		}}, nil
	},
	refused: refusedMCP(mcppolicy.ToolListChats),
}

var readHistoryTool = &tool{
	name: mcppolicy.ToolReadHistory,
	describe: func(s *server) *mcp.Tool {
		return &mcp.Tool{Name: mcppolicy.ToolReadHistory, Title: "Read a conversation", InputSchema: readHistorySchema(s.l.MaxHistoryMessages),
			Description: "The last N messages of one conversation, secrets redacted (garra.mcp.v1 with redacted: true).",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	},
	prepare: func(_ context.Context, s *server, req *mcp.CallToolRequest) (*call, error) {
		var a readHistoryArgs
		if err := strictargs.Decode(arguments(req), &a); err != nil {
			return nil, err
		}
		switch {
		case a.Chat == nil || *a.Chat == "":
			return nil, errors.New("chat: required")
		case utf8.RuneCountInString(*a.Chat) > maxChatHandleLen:
			return nil, fmt.Errorf("chat: at most %d characters", maxChatHandleLen)
		}
		limit, err := mcppolicy.HistoryLimit(s.l, a.Limit)
		if err != nil {
			return nil, err
		}
		return &call{run: func(ctx context.Context) (outcome, error) {
			msgs, kind := s.scopedHistory(ctx, *a.Chat, limit)
			if kind != "" {
				return outcome{}, &mcppolicy.Refused{Kind: kind}
			}
			return okOutcome(mcppolicy.ToolReadHistory, map[string]any{"messages": msgs, "redacted": true}), nil
		}}, nil
	},
	refused: refusedMCP(mcppolicy.ToolReadHistory),
}

var pairStatusTool = &tool{
	name: mcppolicy.ToolPairStatus,
	describe: func(*server) *mcp.Tool {
		return &mcp.Tool{Name: mcppolicy.ToolPairStatus, Title: "Pairing status", InputSchema: noArgsSchema,
			Description: "Channel pairing and allowlist state, without pairing codes (garra.mcp.v1).",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}
	},
	prepare: func(_ context.Context, s *server, req *mcp.CallToolRequest) (*call, error) {
		if err := strictargs.Decode(arguments(req), &noArgs{}); err != nil {
			return nil, err
		}
		return &call{run: func(ctx context.Context) (outcome, error) {
			st, err := s.o.Chats.Store.Pairing(ctx)
			if err != nil {
				s.o.Logger.Error("pairing store", "error", err)
				return outcome{}, &mcppolicy.Refused{Kind: errkinds.Unavailable}
			}
			if st == nil {
				st = []chat.PairStatus{}
			}
			return okOutcome(mcppolicy.ToolPairStatus, map[string]any{"channels": st}), nil
		}}, nil
	},
	refused: refusedMCP(mcppolicy.ToolPairStatus),
}

// statusData is garra_status's data (and garra://status's) for the
// caller. The conversation count is of those in its chat scope: an
// orchestrator learns nothing, not even how many, about conversations it
// may not see.
func (s *server) statusData(ctx context.Context) map[string]any {
	ch := s.o.Chats
	convs, err := ch.Store.Conversations(ctx, "")
	if err != nil {
		s.o.Logger.Error("conversation store", "error", err)
	}
	convs = slices.DeleteFunc(convs, func(cv chat.Conversation) bool { return !mcppolicy.ChatInScope(s.c, cv.ID) })
	channels := []map[string]any{}
	for _, name := range []string{chat.ChannelTelegram, chat.ChannelWeb} {
		channels = append(channels, map[string]any{"name": name, "online": name == chat.ChannelWeb || ch.Sender.Online(name)})
	}
	data := map[string]any{
		"version":       s.o.Version,
		"uptime_secs":   int64(s.o.Now().Sub(ch.Started).Seconds()),
		"channels":      channels,
		"conversations": len(convs),
	}
	if s.o.Quota.Bounded() {
		// The caller's own quota only: what is left of each it has.
		data["quota"] = s.o.Quota.Status()
	}
	return data
}

// scopedChats is the conversations the caller may see, titles redacted
// (garra_list_chats and garra://chats). An error means the store is
// unavailable (logged).
func (s *server) scopedChats(ctx context.Context, channel string) ([]chat.Conversation, error) {
	convs, err := s.o.Chats.Store.Conversations(ctx, channel)
	if err != nil {
		s.o.Logger.Error("conversation store", "error", err)
		return nil, err
	}
	rows := []chat.Conversation{}
	for _, cv := range convs {
		if mcppolicy.ChatInScope(s.c, cv.ID) {
			cv.Title = s.o.Chats.Redactor.String(cv.Title)
			rows = append(rows, cv)
		}
	}
	return rows, nil
}

// scopedHistory is the last limit messages of conversation id, redacted,
// for the caller (garra_read_history and garra://chats/{chat}); kind is
// not_found or unavailable on failure. Out of scope reads exactly like
// missing: no existence oracle.
func (s *server) scopedHistory(ctx context.Context, id string, limit int) ([]chat.Message, errkinds.Kind) {
	if !mcppolicy.ChatInScope(s.c, id) {
		return nil, errkinds.NotFound
	}
	msgs, err := s.o.Chats.Store.History(ctx, id, limit)
	if errors.Is(err, chat.ErrNotFound) {
		return nil, errkinds.NotFound
	}
	if err != nil {
		s.o.Logger.Error("conversation store", "error", err)
		return nil, errkinds.Unavailable
	}
	for i := range msgs {
		msgs[i].Text = s.o.Chats.Redactor.String(msgs[i].Text)
	}
	if msgs == nil {
		msgs = []chat.Message{}
	}
	return msgs, ""
}
