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
	"github.com/garraia/garra/internal/toolchain"
)

// The gateway's resources. Each is filtered by the same policy as the
// tools: a caller lists and reads only what its tools would show it.
const (
	ResourceStatus = "garra://status"       // what garra_status returns; with garra_status
	ResourcePolicy = "garra://policy"       // the caller's own policy; everyone
	ResourceChats  = "garra://chats"        // what garra_list_chats returns; with garra_list_chats
	ResourceChat   = "garra://chats/{chat}" // one redacted history; with garra_read_history

	chatURIPrefix = "garra://chats/"

	// ResourceToolchain is the caller's own sandbox toolchain, read from
	// its sandbox; with garra_agent and a sandbox.
	ResourceToolchain = toolchain.URI
)

// SchemaPolicy tags the garra://policy document.
const SchemaPolicy = "garra.policy.v1"

// resourceTool is the tool a resource stands for; garra://policy has none.
var resourceTool = map[string]string{ResourceStatus: ToolStatus, ResourceChats: ToolListChats, ResourceChat: ToolReadHistory}

// AllResources lists the resources and the template in resources/list order.
var AllResources = []string{ResourceStatus, ResourcePolicy, ResourceChats, ResourceChat, ResourceToolchain}

// ResourceVisible reports whether c may list and read a resource (a URI, or
// ResourceChat for the template): exactly when it may call its tool.
func ResourceVisible(c Caller, s Switches, resource string) bool {
	switch resource {
	case ResourcePolicy:
		return true
	case ResourceToolchain:
		// Only a caller whose agent runs in a sandbox has a toolchain;
		// it is its own sandbox's, read with its own sandbox token.
		return c.Sandbox != nil && c.Sandbox.URL != "" && slices.Contains(Visible(c, s), ToolAgent)
	}
	t, ok := resourceTool[resource]
	return ok && slices.Contains(Visible(c, s), t)
}

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
func (g *policy) addResources(s *mcp.Server, c Caller) {
	s.AddResource(&mcp.Resource{URI: ResourceStatus, Name: "status", Title: "Gateway status", MIMEType: jsonMIME,
		Description: "What garra_status returns: version, uptime, channels, conversations (garra.mcp.v1)."}, g.readStatus(c))
	s.AddResource(&mcp.Resource{URI: ResourcePolicy, Name: "policy", Title: "This caller's policy", MIMEType: jsonMIME,
		Description: "Your own effective policy: tools, budgets left this minute, allowed models, agent ceiling, chat scope (garra.policy.v1)."}, g.readPolicy(c))
	s.AddResource(&mcp.Resource{URI: ResourceChats, Name: "chats", Title: "Conversations", MIMEType: jsonMIME,
		Description: "What garra_list_chats returns, each row with its garra://chats/{chat} uri (garra.mcp.v1)."}, g.readChats(c))
	s.AddResource(&mcp.Resource{URI: ResourceToolchain, Name: "toolchain", Title: "Your sandbox's toolchain", MIMEType: jsonMIME,
		Description: "The programs on your sandbox's PATH with their versions, and the required tools it lacks, as your sandbox reports them."}, g.readToolchain(c))
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: ResourceChat, Name: "chat", Title: "A conversation's history", MIMEType: jsonMIME,
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

func (g *policy) readStatus(c Caller) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if !ResourceVisible(c, g.switches, ResourceStatus) {
			return nil, refusedRead(ctx, ResourceStatus, "", req.Params.URI)
		}
		text, err := envelopeText(ToolStatus, g.statusData(ctx, c))
		if err != nil {
			return nil, err
		}
		note(ctx, ResourceStatus, "", audit.OutcomeOK, "")
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
func (g *policy) policyFor(c Caller) policyView {
	vis := Visible(c, g.switches)
	has := func(t string) bool { return slices.Contains(vis, t) }
	m := g.cfg.Gateway.MCPHTTP
	p := policyView{Schema: SchemaPolicy, Surface: audit.SurfaceHTTP, Caller: c.Name, Owner: c.Owner,
		Tools: append([]string{}, vis...), Budgets: map[string]budgetView{}}
	for _, r := range AllResources {
		if ResourceVisible(c, g.switches, r) {
			p.Resources = append(p.Resources, r)
		}
	}
	for _, b := range []struct {
		name, tool string
		budget     Counter
	}{{"send", ToolSendMessage, g.sendBudget}, {"ask", ToolAsk, g.askBudget}, {"agent", ToolAgent, g.agentBudget}} {
		if has(b.tool) {
			p.Budgets[b.name] = budgetView{Remaining: b.budget.Remaining(), PerMinute: b.budget.Limit()}
		}
	}
	if has(ToolAsk) || has(ToolAgent) {
		p.AllowedModels = m.AskAllowedModels
		if len(p.AllowedModels) == 0 {
			p.AllowedModels = []string{g.cfg.LLM.Model}
		}
	}
	if has(ToolAgent) {
		p.AgentMaxSeconds = m.AgentMaxSeconds
	}
	if has(ToolReadHistory) {
		p.MaxHistoryMessages = m.MaxHistoryMessages
	}
	if has(ToolListChats) || has(ToolReadHistory) || has(ToolSendMessage) {
		if c.Owner || len(c.Chats) == 0 {
			p.ChatScope = &chatScope{All: true}
		} else {
			p.ChatScope = &chatScope{Chats: c.Chats}
		}
	}
	return p
}

func (g *policy) readPolicy(c Caller) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		b, err := json.Marshal(g.policyFor(c))
		if err != nil {
			return nil, err
		}
		note(ctx, ResourcePolicy, "", audit.OutcomeOK, "")
		return jsonContents(req.Params.URI, string(b)), nil
	}
}

// chatRow is a garra_list_chats row plus its resource URI.
type chatRow struct {
	chat.Conversation
	URI string `json:"uri"`
}

func (g *policy) readChats(c Caller) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if !ResourceVisible(c, g.switches, ResourceChats) {
			return nil, refusedRead(ctx, ResourceChats, "", req.Params.URI)
		}
		convs, err := g.scopedChats(ctx, c, "")
		if err != nil {
			note(ctx, ResourceChats, "", audit.OutcomeError, errkinds.Unavailable)
			return nil, errStoreUnavailable
		}
		rows := make([]chatRow, 0, len(convs))
		for _, cv := range convs {
			rows = append(rows, chatRow{Conversation: cv, URI: ChatURI(cv.ID)})
		}
		text, err := envelopeText(ToolListChats, map[string]any{"chats": rows})
		if err != nil {
			return nil, err
		}
		note(ctx, ResourceChats, "", audit.OutcomeOK, "")
		return jsonContents(req.Params.URI, text), nil
	}
}

func (g *policy) readChat(c Caller) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		id, err := url.PathUnescape(strings.TrimPrefix(uri, chatURIPrefix))
		if err != nil {
			id = ""
		}
		switch {
		case !ResourceVisible(c, g.switches, ResourceChat):
			return nil, refusedRead(ctx, ResourceChat, id, uri)
		case id == "":
			note(ctx, ResourceChat, "", audit.OutcomeNotFound, errkinds.NotFound)
			return nil, notFound(uri)
		case !ChatInScope(c, id):
			// Audited as the refusal it is; answered exactly like missing.
			note(ctx, ResourceChat, id, audit.OutcomeRefused, errkinds.NotFound)
			return nil, notFound(uri)
		}
		msgs, kind := g.scopedHistory(ctx, c, id, g.cfg.Gateway.MCPHTTP.MaxHistoryMessages)
		switch kind {
		case errkinds.NotFound:
			note(ctx, ResourceChat, id, audit.OutcomeNotFound, errkinds.NotFound)
			return nil, notFound(uri)
		case errkinds.Unavailable:
			note(ctx, ResourceChat, id, audit.OutcomeError, errkinds.Unavailable)
			return nil, errStoreUnavailable
		}
		text, err := envelopeText(ToolReadHistory, map[string]any{"messages": msgs, "redacted": true})
		if err != nil {
			return nil, err
		}
		note(ctx, ResourceChat, id, audit.OutcomeOK, "")
		return jsonContents(uri, text), nil
	}
}

// resourceMiddleware filters resources/list and resources/templates/list
// by the policy, and audits every resources/read (including URIs the SDK
// itself answers as not found) and every call to a tool that does not
// exist (the seven are audited by dispatch).
func (g *policy) resourceMiddleware(c Caller) mcp.Middleware {
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
				r.Resources = slices.DeleteFunc(r.Resources, func(x *mcp.Resource) bool { return !ResourceVisible(c, g.switches, x.URI) })
			case *mcp.ListResourceTemplatesResult:
				r.ResourceTemplates = slices.DeleteFunc(r.ResourceTemplates, func(x *mcp.ResourceTemplate) bool {
					return !ResourceVisible(c, g.switches, x.URITemplate)
				})
			}
			return res, err
		}
	}
}

func (g *policy) auditedRead(ctx context.Context, c Caller, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
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

func (g *policy) auditedUnknownTool(ctx context.Context, c Caller, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	name := ""
	if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
		name = p.Name
	}
	res, err := next(ctx, method, req)
	if !slices.Contains(AllTools, name) {
		g.audit.Record(audit.Record{Surface: audit.SurfaceHTTP, Caller: c.Name, Tool: "unknown", Target: name,
			Outcome: audit.OutcomeNotFound, Kind: errkinds.NotFound, Auth: c.Auth, Identity: c.Identity, IdentityPersonal: c.IdentityPersonal})
	}
	return res, err
}

// errSandboxUnavailable is what a toolchain read gets when the caller's
// sandbox does not answer (its reason is logged, never sent).
var errSandboxUnavailable = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "your sandbox is unavailable"}

func (g *policy) readToolchain(c Caller) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if !ResourceVisible(c, g.switches, ResourceToolchain) {
			return nil, refusedRead(ctx, ResourceToolchain, "", req.Params.URI)
		}
		rep, err := g.readSandboxToolchain(ctx, c)
		if err != nil {
			g.log.Warn("sandbox toolchain not read", "caller", c.Name, "error", err)
			note(ctx, ResourceToolchain, "", audit.OutcomeError, errkinds.Unavailable)
			return nil, errSandboxUnavailable
		}
		b, err := json.Marshal(rep)
		if err != nil {
			return nil, err
		}
		note(ctx, ResourceToolchain, "", audit.OutcomeOK, "")
		return jsonContents(req.Params.URI, string(b)), nil
	}
}
