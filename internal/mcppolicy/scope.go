package mcppolicy

import (
	"slices"
	"strings"

	"github.com/garraia/garra/internal/errkinds"
)

// SendTargetRefusal decides a garra_send_message destination after the
// switches: channel, the operator's approved destinations, the caller's
// chat scope. It never needs to echo the chat id.
func SendTargetRefusal(c Caller, channel, chatID string, approved []string) errkinds.Kind {
	if channel != "telegram" {
		return errkinds.ChannelUnsupported
	}
	if len(approved) == 0 {
		return errkinds.NoAllowlist
	}
	if !slices.Contains(approved, chatID) {
		return errkinds.TargetNotAllowed
	}
	if !ChatInScope(c, "telegram:"+chatID) {
		return errkinds.TargetNotAllowed
	}
	return ""
}

// ChatInScope reports whether the caller may see or send to a
// conversation. The owner sees everything; an orchestrator sees only the
// conversations its `chats` list names, so an empty list admits none: a
// third party gets the owner's conversations only by explicit grant. An
// entry is a conversation id ("telegram:-100123") or a bare chat id
// ("-100123", as the GarraServer resource writes them), which matches that
// chat on any channel. The local user has no conversations to see.
func ChatInScope(c Caller, id string) bool {
	switch c.Kind {
	case Owner:
		return true
	case Local:
		return false
	}
	_, chatID, _ := strings.Cut(id, ":")
	return slices.ContainsFunc(c.Chats, func(entry string) bool {
		return entry == id || (!strings.Contains(entry, ":") && entry == chatID)
	})
}
