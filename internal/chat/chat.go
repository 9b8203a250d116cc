// Package chat is the assistant's conversations and channels as the gateway
// sees them: a Store to list and read conversations and pairing state, and a
// Sender to deliver a message on a channel. The gateway's chat tools and
// chat API go through these interfaces only, so the store behind them
// (SQLite today, PostgreSQL for several replicas later) can change freely.
package chat

import (
	"context"
	"errors"
	"strings"
	"time"
)

// Channel names.
const (
	ChannelTelegram = "telegram"
	ChannelWeb      = "web"
)

// ErrNotFound is returned for a conversation that does not exist.
var ErrNotFound = errors.New("conversation not found")

// Conversation is one row of garra_list_chats / GET /api/sessions.
type Conversation struct {
	// ID is the opaque handle passed to History (the tool's `chat`).
	ID        string    `json:"chat"`
	Channel   string    `json:"channel"`
	Title     string    `json:"title,omitempty"`
	Messages  int       `json:"messages"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Message is one stored message.
type Message struct {
	Role string    `json:"role"` // user | assistant
	Text string    `json:"text"`
	At   time.Time `json:"at"`
}

// PairStatus is the pairing and allowlist state of one channel, without any
// pairing code.
type PairStatus struct {
	Channel         string   `json:"channel"`
	AllowlistSize   int      `json:"allowlist_size"`
	PendingPairings int      `json:"pending_pairings"`
	Pending         []string `json:"pending_users,omitempty"` // display names, never codes
}

// Store reads conversations and pairing state.
type Store interface {
	// Conversations lists conversations, newest first; channel "" = all.
	Conversations(ctx context.Context, channel string) ([]Conversation, error)
	// History returns the last limit messages of a conversation, oldest
	// first, or ErrNotFound.
	History(ctx context.Context, id string, limit int) ([]Message, error)
	// Pairing reports every channel's pairing state.
	Pairing(ctx context.Context) ([]PairStatus, error)
}

// Sender delivers messages on channels.
type Sender interface {
	// Online reports whether the channel is running.
	Online(channel string) bool
	// Send delivers text to chatID on channel. The error may carry the
	// channel's own text: log it, never return it to a remote caller.
	Send(ctx context.Context, channel, chatID, text string) error
}

// Empty is a Store with no conversations and a Sender with no channel
// online: what a gateway without channels serves.
type Empty struct{}

// Conversations implements Store.
func (Empty) Conversations(context.Context, string) ([]Conversation, error) { return nil, nil }

// History implements Store.
func (Empty) History(context.Context, string, int) ([]Message, error) { return nil, ErrNotFound }

// Pairing implements Store.
func (Empty) Pairing(context.Context) ([]PairStatus, error) { return nil, nil }

// Online implements Sender.
func (Empty) Online(string) bool { return false }

// Send implements Sender.
func (Empty) Send(context.Context, string, string, string) error {
	return errors.New("no channel is running")
}

// Recorder is the writer side of the store, for channels and the chat API.
// Append returns only once msg is committed (durable), creating the
// conversation on its first message. convID is "<channel>:<chat id>" and
// must belong to channel.
type Recorder interface {
	Append(ctx context.Context, convID, channel string, msg Message) error
}

// Roles of a Message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// ConvID is the conversation id of chatID on channel: "<channel>:<chat id>",
// e.g. "telegram:123456" or "web:<uuid>".
func ConvID(channel, chatID string) string { return channel + ":" + chatID }

// SplitConvID splits a conversation id into its channel and chat id; ok is
// false when id is not "<channel>:<chat id>" with both parts non-empty.
func SplitConvID(id string) (channel, chatID string, ok bool) {
	channel, chatID, ok = strings.Cut(id, ":")
	return channel, chatID, ok && channel != "" && chatID != ""
}
