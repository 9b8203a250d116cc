package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/mcppolicy"
)

// chatURIPrefix is garra://chats/{chat} up to its variable.
const chatURIPrefix = "garra://chats/"

const jsonMIME = "application/json"

// ChatURI is a conversation's resource URI: the RFC 6570 expansion of
// garra://chats/{chat}, so "telegram:111" becomes garra://chats/telegram%3A111.
func ChatURI(id string) string {
	var b strings.Builder
	b.WriteString(chatURIPrefix)
	for i := 0; i < len(id); i++ {
		ch := id[i]
		if 'a' <= ch && ch <= 'z' || 'A' <= ch && ch <= 'Z' || '0' <= ch && ch <= '9' || strings.IndexByte("-._~", ch) >= 0 {
			b.WriteByte(ch)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", ch)
	}
	return b.String()
}

// addResources registers the resources the caller may see; a hidden one
// reads like a missing one (the audit middleware records the refusal).
func (s *server) addResources(srv *mcp.Server) {
	for _, r := range mcppolicy.VisibleResources(s.c, s.l) {
		switch r {
		case mcppolicy.ResourcePolicy:
			srv.AddResource(s.policyResource(), s.readPolicy)
		case mcppolicy.ResourceStatus:
			srv.AddResource(&mcp.Resource{URI: r, Name: "status", Title: "Gateway status", MIMEType: jsonMIME,
				Description: "What garra_status returns: version, uptime, channels, conversations (garra.mcp.v1)."}, s.readStatus)
		case mcppolicy.ResourceChats:
			srv.AddResource(&mcp.Resource{URI: r, Name: "chats", Title: "Conversations", MIMEType: jsonMIME,
				Description: "What garra_list_chats returns, each row with its garra://chats/{chat} uri (garra.mcp.v1)."}, s.readChats)
		case mcppolicy.ResourceToolchain:
			srv.AddResource(&mcp.Resource{URI: r, Name: "toolchain", Title: "Your sandbox's toolchain", MIMEType: jsonMIME,
				Description: "The programs on your sandbox's PATH with their versions, and the required tools it lacks, as your sandbox reports them."}, s.readToolchain)
		case mcppolicy.ResourceChat:
			srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: r, Name: "chat", Title: "A conversation's history", MIMEType: jsonMIME,
				Description: "The last max_history_messages messages of one conversation, secrets redacted (garra.mcp.v1). Use the uri of a garra://chats row."}, s.readChat)
		}
	}
}

// contents is a read's answer; the gateway's are each caller's own.
func (s *server) contents(uri, text string) *mcp.ReadResourceResult {
	r := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: jsonMIME, Text: text}}}
	if !s.local() {
		r.CacheScope = "private"
	}
	return r
}

// notFound is the SDK's own "Resource not found" (-32602): what an unknown
// URI gets, so an out-of-scope conversation reads the same.
func notFound(uri string) error { return mcp.ResourceNotFoundError(uri) }

var errStoreUnavailable = &jsonrpc.Error{Code: int64(errkinds.RPCStoreUnavailable.Code), Message: errkinds.RPCStoreUnavailable.Message}

// errSandboxUnavailable is what a toolchain read gets when the caller's
// sandbox does not answer (its reason is logged, never sent).
var errSandboxUnavailable = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "your sandbox is unavailable"}

func (s *server) readPolicy(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	b, err := json.Marshal(s.policyView())
	if err != nil {
		return nil, err
	}
	note(ctx, mcppolicy.ResourcePolicy, "", audit.OutcomeOK, "")
	return s.contents(req.Params.URI, string(b)), nil
}

func (s *server) readStatus(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	text := encode(mcpEnvelope{Schema: SchemaMCP, OK: true, Tool: mcppolicy.ToolStatus, Data: s.statusData(ctx)})
	note(ctx, mcppolicy.ResourceStatus, "", audit.OutcomeOK, "")
	return s.contents(req.Params.URI, text), nil
}

// chatRow is a garra_list_chats row plus its resource URI.
type chatRow struct {
	chat.Conversation
	URI string `json:"uri"`
}

func (s *server) readChats(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	convs, err := s.scopedChats(ctx, "")
	if err != nil {
		note(ctx, mcppolicy.ResourceChats, "", audit.OutcomeError, errkinds.Unavailable)
		return nil, errStoreUnavailable
	}
	rows := make([]chatRow, 0, len(convs))
	for _, cv := range convs {
		rows = append(rows, chatRow{Conversation: cv, URI: ChatURI(cv.ID)})
	}
	text := encode(mcpEnvelope{Schema: SchemaMCP, OK: true, Tool: mcppolicy.ToolListChats, Data: map[string]any{"chats": rows}})
	note(ctx, mcppolicy.ResourceChats, "", audit.OutcomeOK, "")
	return s.contents(req.Params.URI, text), nil
}

func (s *server) readChat(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	id, err := url.PathUnescape(strings.TrimPrefix(uri, chatURIPrefix))
	if err != nil {
		id = ""
	}
	switch {
	case id == "":
		note(ctx, mcppolicy.ResourceChat, "", audit.OutcomeNotFound, errkinds.NotFound)
		return nil, notFound(uri)
	case !mcppolicy.ChatInScope(s.c, id):
		// Audited as the refusal it is; answered exactly like missing.
		note(ctx, mcppolicy.ResourceChat, id, audit.OutcomeRefused, errkinds.NotFound)
		return nil, notFound(uri)
	}
	msgs, kind := s.scopedHistory(ctx, id, s.l.MaxHistoryMessages)
	switch kind {
	case errkinds.NotFound:
		note(ctx, mcppolicy.ResourceChat, id, audit.OutcomeNotFound, errkinds.NotFound)
		return nil, notFound(uri)
	case errkinds.Unavailable:
		note(ctx, mcppolicy.ResourceChat, id, audit.OutcomeError, errkinds.Unavailable)
		return nil, errStoreUnavailable
	}
	text := encode(mcpEnvelope{Schema: SchemaMCP, OK: true, Tool: mcppolicy.ToolReadHistory, Data: map[string]any{"messages": msgs, "redacted": true}})
	note(ctx, mcppolicy.ResourceChat, id, audit.OutcomeOK, "")
	return s.contents(uri, text), nil
}

func (s *server) readToolchain(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	if s.o.Toolchain == nil {
		note(ctx, mcppolicy.ResourceToolchain, "", audit.OutcomeError, errkinds.Unavailable)
		return nil, errSandboxUnavailable
	}
	rep, err := s.o.Toolchain(ctx)
	if err != nil {
		s.o.Logger.Warn("sandbox toolchain not read", "caller", s.c.Name, "error", err)
		note(ctx, mcppolicy.ResourceToolchain, "", audit.OutcomeError, errkinds.Unavailable)
		return nil, errSandboxUnavailable
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return nil, err
	}
	note(ctx, mcppolicy.ResourceToolchain, "", audit.OutcomeOK, "")
	return s.contents(req.Params.URI, string(b)), nil
}
