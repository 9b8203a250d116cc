package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
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

// SchemaPolicy tags the garra://policy document.
const SchemaPolicy = "garra.policy.v1"

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

const jsonMIME = "application/json"

// addResources registers every resource on c's server; the read handlers
// and the list filter apply the policy.
func (g *policy) addResources(s *mcp.Server, c mcppolicy.Caller) {
	s.AddResource(&mcp.Resource{URI: mcppolicy.ResourceStatus, Name: "status", Title: "Gateway status", MIMEType: jsonMIME,
		Description: "What garra_status returns: version, uptime, channels, conversations (garra.mcp.v1)."}, g.readStatus(c))
	s.AddResource(&mcp.Resource{URI: mcppolicy.ResourcePolicy, Name: "policy", Title: "This caller's policy", MIMEType: jsonMIME,
		Description: "Your own effective policy: tools, budgets left this minute, allowed models, agent ceiling, chat scope (garra.policy.v1)."}, g.readPolicy(c))
	s.AddResource(&mcp.Resource{URI: mcppolicy.ResourceChats, Name: "chats", Title: "Conversations", MIMEType: jsonMIME,
		Description: "What garra_list_chats returns, each row with its garra://chats/{chat} uri (garra.mcp.v1)."}, g.readChats(c))
	s.AddResource(&mcp.Resource{URI: mcppolicy.ResourceToolchain, Name: "toolchain", Title: "Your sandbox's toolchain", MIMEType: jsonMIME,
		Description: "The programs on your sandbox's PATH with their versions, and the required tools it lacks, as your sandbox reports them."}, g.readToolchain(c))
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: mcppolicy.ResourceChat, Name: "chat", Title: "A conversation's history", MIMEType: jsonMIME,
		Description: "The last max_history_messages messages of one conversation, secrets redacted (garra.mcp.v1). Use the uri of a garra://chats row."}, g.readChat(c))
}

// readNote carries what a read handler decided to the audit middleware.
type readNote struct {
	resource, target, outcome string
	kind                      errkinds.Kind
	set                       bool
}

type readNoteKey struct{}

func note(ctx context.Context, resource, target, outcome string, kind errkinds.Kind) {
	if n, ok := ctx.Value(readNoteKey{}).(*readNote); ok {
		*n = readNote{resource: resource, target: target, outcome: outcome, kind: kind, set: true}
	}
}

// notFound is the SDK's own "Resource not found" (-32602): what an unknown
// URI gets, so a hidden or out-of-scope resource reads the same.
func notFound(uri string) error { return mcp.ResourceNotFoundError(uri) }

func jsonContents(uri, text string) *mcp.ReadResourceResult {
	r := &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: jsonMIME, Text: text}}}
	r.CacheScope = "private"
	return r
}

func envelopeText(tool string, data any) (string, error) {
	b, err := json.Marshal(mcpEnvelope{Schema: SchemaMCP, OK: true, Tool: tool, Data: data})
	return string(b), err
}

var errStoreUnavailable = &jsonrpc.Error{Code: int64(errkinds.RPCStoreUnavailable.Code), Message: errkinds.RPCStoreUnavailable.Message}

// refusedRead notes a read the policy hides and answers "not found".
func refusedRead(ctx context.Context, resource, target, uri string) error {
	note(ctx, resource, target, audit.OutcomeRefused, errkinds.ToolNotAllowed)
	return notFound(uri)
}

func (g *policy) readStatus(c mcppolicy.Caller) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if !mcppolicy.ResourceVisible(c, g.limits, mcppolicy.ResourceStatus) {
			return nil, refusedRead(ctx, mcppolicy.ResourceStatus, "", req.Params.URI)
		}
		text, err := envelopeText(mcppolicy.ToolStatus, g.statusData(ctx, c))
		if err != nil {
			return nil, err
		}
		note(ctx, mcppolicy.ResourceStatus, "", audit.OutcomeOK, "")
		return jsonContents(req.Params.URI, text), nil
	}
}

// policyView is garra.policy.v1 for the HTTP gateway: the caller's own
// effective policy, never another caller's. Budgets, models and the agent
// ceiling appear only for tools the caller can see.
type policyView struct {
	Schema             string                `json:"schema"`
	Surface            string                `json:"surface"`
	Caller             string                `json:"caller"`
	Owner              bool                  `json:"owner"`
	Tools              []string              `json:"tools"`
	Resources          []string              `json:"resources"`
	Budgets            map[string]budgetView `json:"budgets"`
	AllowedModels      []string              `json:"allowed_models,omitempty"`
	AgentMaxSeconds    int                   `json:"agent_max_seconds,omitempty"`
	MaxHistoryMessages int                   `json:"max_history_messages,omitempty"`
	ChatScope          *chatScope            `json:"chat_scope,omitempty"`
}

type budgetView struct {
	Remaining int `json:"remaining"`
	PerMinute int `json:"per_minute"`
}

type chatScope struct {
	All   bool     `json:"all"`
	Chats []string `json:"chats,omitempty"`
}

// policyFor is what garra://policy shows c now.
func (g *policy) policyFor(c mcppolicy.Caller) policyView {
	vis := mcppolicy.Visible(c, g.limits)
	has := func(t string) bool { return slices.Contains(vis, t) }
	m := g.cfg.Gateway.MCPHTTP
	p := policyView{Schema: SchemaPolicy, Surface: audit.SurfaceHTTP, Caller: c.Name, Owner: c.IsOwner(),
		Tools: append([]string{}, vis...), Budgets: map[string]budgetView{}}
	for _, r := range mcppolicy.AllResources {
		if mcppolicy.ResourceVisible(c, g.limits, r) {
			p.Resources = append(p.Resources, r)
		}
	}
	for _, b := range []struct {
		name, tool string
		budget     Counter
	}{{"send", mcppolicy.ToolSendMessage, g.sendBudget}, {"ask", mcppolicy.ToolAsk, g.askBudget}, {"agent", mcppolicy.ToolAgent, g.agentBudget}} {
		if has(b.tool) {
			p.Budgets[b.name] = budgetView{Remaining: b.budget.Remaining(), PerMinute: b.budget.Limit()}
		}
	}
	if has(mcppolicy.ToolAsk) || has(mcppolicy.ToolAgent) {
		p.AllowedModels = m.AskAllowedModels
		if len(p.AllowedModels) == 0 {
			p.AllowedModels = []string{g.cfg.LLM.Model}
		}
	}
	if has(mcppolicy.ToolAgent) {
		p.AgentMaxSeconds = m.AgentMaxSeconds
	}
	if has(mcppolicy.ToolReadHistory) {
		p.MaxHistoryMessages = m.MaxHistoryMessages
	}
	if has(mcppolicy.ToolListChats) || has(mcppolicy.ToolReadHistory) || has(mcppolicy.ToolSendMessage) {
		if c.IsOwner() || len(c.Chats) == 0 {
			p.ChatScope = &chatScope{All: true}
		} else {
			p.ChatScope = &chatScope{Chats: c.Chats}
		}
	}
	return p
}

func (g *policy) readPolicy(c mcppolicy.Caller) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		b, err := json.Marshal(g.policyFor(c))
		if err != nil {
			return nil, err
		}
		note(ctx, mcppolicy.ResourcePolicy, "", audit.OutcomeOK, "")
		return jsonContents(req.Params.URI, string(b)), nil
	}
}

// chatRow is a garra_list_chats row plus its resource URI.
type chatRow struct {
	chat.Conversation
	URI string `json:"uri"`
}

func (g *policy) readChats(c mcppolicy.Caller) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if !mcppolicy.ResourceVisible(c, g.limits, mcppolicy.ResourceChats) {
			return nil, refusedRead(ctx, mcppolicy.ResourceChats, "", req.Params.URI)
		}
		convs, err := g.scopedChats(ctx, c, "")
		if err != nil {
			note(ctx, mcppolicy.ResourceChats, "", audit.OutcomeError, errkinds.Unavailable)
			return nil, errStoreUnavailable
		}
		rows := make([]chatRow, 0, len(convs))
		for _, cv := range convs {
			rows = append(rows, chatRow{Conversation: cv, URI: ChatURI(cv.ID)})
		}
		text, err := envelopeText(mcppolicy.ToolListChats, map[string]any{"chats": rows})
		if err != nil {
			return nil, err
		}
		note(ctx, mcppolicy.ResourceChats, "", audit.OutcomeOK, "")
		return jsonContents(req.Params.URI, text), nil
	}
}

func (g *policy) readChat(c mcppolicy.Caller) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		id, err := url.PathUnescape(strings.TrimPrefix(uri, chatURIPrefix))
		if err != nil {
			id = ""
		}
		switch {
		case !mcppolicy.ResourceVisible(c, g.limits, mcppolicy.ResourceChat):
			return nil, refusedRead(ctx, mcppolicy.ResourceChat, id, uri)
		case id == "":
			note(ctx, mcppolicy.ResourceChat, "", audit.OutcomeNotFound, errkinds.NotFound)
			return nil, notFound(uri)
		case !mcppolicy.ChatInScope(c, id):
			// Audited as the refusal it is; answered exactly like missing.
			note(ctx, mcppolicy.ResourceChat, id, audit.OutcomeRefused, errkinds.NotFound)
			return nil, notFound(uri)
		}
		msgs, kind := g.scopedHistory(ctx, c, id, g.cfg.Gateway.MCPHTTP.MaxHistoryMessages)
		switch kind {
		case errkinds.NotFound:
			note(ctx, mcppolicy.ResourceChat, id, audit.OutcomeNotFound, errkinds.NotFound)
			return nil, notFound(uri)
		case errkinds.Unavailable:
			note(ctx, mcppolicy.ResourceChat, id, audit.OutcomeError, errkinds.Unavailable)
			return nil, errStoreUnavailable
		}
		text, err := envelopeText(mcppolicy.ToolReadHistory, map[string]any{"messages": msgs, "redacted": true})
		if err != nil {
			return nil, err
		}
		note(ctx, mcppolicy.ResourceChat, id, audit.OutcomeOK, "")
		return jsonContents(uri, text), nil
	}
}

// resourceMiddleware filters resources/list and resources/templates/list
// by the policy, and audits every resources/read (including URIs the SDK
// itself answers as not found) and every call to a tool that does not
// exist (the seven are audited by dispatch).
func (g *policy) resourceMiddleware(c mcppolicy.Caller) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "resources/read":
				return g.auditedRead(ctx, c, next, method, req)
			case "tools/call":
				return g.auditedUnknownTool(ctx, c, next, method, req)
			}
			res, err := next(ctx, method, req)
			if err != nil {
				return res, err
			}
			switch r := res.(type) {
			case *mcp.ListResourcesResult:
				r.Resources = slices.DeleteFunc(r.Resources, func(x *mcp.Resource) bool { return !mcppolicy.ResourceVisible(c, g.limits, x.URI) })
			case *mcp.ListResourceTemplatesResult:
				r.ResourceTemplates = slices.DeleteFunc(r.ResourceTemplates, func(x *mcp.ResourceTemplate) bool {
					return !mcppolicy.ResourceVisible(c, g.limits, x.URITemplate)
				})
			}
			return res, err
		}
	}
}

func (g *policy) auditedRead(ctx context.Context, c mcppolicy.Caller, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	uri := ""
	if p, ok := req.GetParams().(*mcp.ReadResourceParams); ok && p != nil {
		uri = p.URI
	}
	n := &readNote{}
	start := g.now()
	res, err := next(context.WithValue(ctx, readNoteKey{}, n), method, req)
	d := g.now().Sub(start)
	if !n.set {
		// No resource or template matched: the URI is caller text, so it
		// goes to the audit only as a pseudonym.
		*n = readNote{resource: "unknown", target: uri, outcome: audit.OutcomeNotFound, kind: errkinds.NotFound}
	}
	g.log.Info("mcp resource read", "caller", c.Name, "resource", n.resource, "outcome", n.outcome, "error_kind", n.kind,
		"latency_ms", d.Milliseconds())
	g.audit.Record(audit.Record{Surface: audit.SurfaceHTTP, Caller: c.Name, Resource: n.resource, Target: n.target,
		Outcome: n.outcome, Kind: n.kind, Latency: d, Auth: c.Auth, Identity: c.Identity, IdentityPersonal: c.IdentityPersonal})
	return res, err
}

func (g *policy) auditedUnknownTool(ctx context.Context, c mcppolicy.Caller, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	name := ""
	if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
		name = p.Name
	}
	res, err := next(ctx, method, req)
	if !slices.Contains(mcppolicy.AllTools, name) {
		g.audit.Record(audit.Record{Surface: audit.SurfaceHTTP, Caller: c.Name, Tool: "unknown", Target: name,
			Outcome: audit.OutcomeNotFound, Kind: errkinds.NotFound, Auth: c.Auth, Identity: c.Identity, IdentityPersonal: c.IdentityPersonal})
	}
	return res, err
}

// errSandboxUnavailable is what a toolchain read gets when the caller's
// sandbox does not answer (its reason is logged, never sent).
var errSandboxUnavailable = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "your sandbox is unavailable"}

func (g *policy) readToolchain(c mcppolicy.Caller) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if !mcppolicy.ResourceVisible(c, g.limits, mcppolicy.ResourceToolchain) {
			return nil, refusedRead(ctx, mcppolicy.ResourceToolchain, "", req.Params.URI)
		}
		rep, err := g.readSandboxToolchain(ctx, c, toolchainReadTimeout)
		if err != nil {
			g.log.Warn("sandbox toolchain not read", "caller", c.Name, "error", err)
			note(ctx, mcppolicy.ResourceToolchain, "", audit.OutcomeError, errkinds.Unavailable)
			return nil, errSandboxUnavailable
		}
		b, err := json.Marshal(rep)
		if err != nil {
			return nil, err
		}
		note(ctx, mcppolicy.ResourceToolchain, "", audit.OutcomeOK, "")
		return jsonContents(req.Params.URI, string(b)), nil
	}
}
