package mcpserver

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/mcptrace"
)

// record is an audit record of s's caller: on stdio the name its MCP
// client gave itself, on the gateway the authenticated caller and how it
// proved itself.
func (s *server) record(req mcp.Request) audit.Record {
	if s.local() {
		return audit.Record{Surface: audit.SurfaceStdio, Caller: clientName(req)}
	}
	return audit.Record{Surface: audit.SurfaceHTTP, Caller: s.c.Name, Auth: s.c.Auth, Identity: s.c.Identity, IdentityPersonal: s.c.IdentityPersonal}
}

// auditCall writes the log and audit lines of one call, tells the metrics
// and the trace its outcome: never the prompt, the answer or a
// destination in clear.
func (s *server) auditCall(ctx context.Context, req *mcp.CallToolRequest, tool string, raw json.RawMessage, info callInfo, start time.Time) {
	d := s.o.Now().Sub(start)
	mcptrace.RecordErrorKind(ctx, info.kind)
	if s.o.Observe != nil {
		s.o.Observe(tool, info.outcome, info.kind, d)
	}
	rec := s.record(req)
	rec.Tool, rec.Target, rec.Outcome, rec.Kind, rec.DryRun = tool, auditTarget(tool, raw), info.outcome, info.kind, info.dryRun
	var attrs []any
	if !s.local() {
		attrs = append(attrs, "caller", s.c.Name)
	}
	attrs = append(attrs, "tool", tool, "outcome", info.outcome, "error_kind", info.kind)
	if info.dryRun {
		attrs = append(attrs, "dry_run", true)
	}
	if s.kindOnly(tool, info) {
		rec.KindOnly = true
	} else {
		rec.Provider, rec.Model, rec.Latency = info.provider, info.model, d
		attrs = append(attrs, "provider", info.provider, "model", info.model, "latency_ms", d.Milliseconds())
	}
	s.o.Logger.Info("mcp call", attrs...)
	s.o.Audit.Record(rec)
}

// kindOnly reports whether the log and audit lines of a call carry its
// kind alone: on the gateway a garra_ask that did not succeed (refused,
// invalid, failed) logs neither provider nor model nor latency, so its
// lines say no more about the request than the stable kind does.
func (s *server) kindOnly(tool string, info callInfo) bool {
	return !s.local() && tool == mcppolicy.ToolAsk && info.outcome != audit.OutcomeOK
}

// auditTarget is the conversation a call touches, for the audit file (which
// writes only its pseudonym): read_history's chat, send_message's
// destination as a conversation id. Best effort over raw arguments.
func auditTarget(tool string, args json.RawMessage) string {
	if tool != mcppolicy.ToolReadHistory && tool != mcppolicy.ToolSendMessage {
		return ""
	}
	var a struct {
		Chat    string `json:"chat"`
		Channel string `json:"channel"`
		ChatID  string `json:"chat_id"`
	}
	_ = json.Unmarshal(args, &a)
	if tool == mcppolicy.ToolReadHistory {
		return a.Chat
	}
	if strings.TrimSpace(a.ChatID) == "" {
		return ""
	}
	if a.Channel == "" {
		a.Channel = chat.ChannelTelegram
	}
	return chat.ConvID(a.Channel, strings.TrimSpace(a.ChatID))
}

// auditMiddleware answers and audits what no registered handler sees: a
// call to a tool the caller may not see (refused on the gateway, in the
// tool's envelope; unknown on stdio), a call to a tool that does not
// exist, and every resources/read, an unknown URI included.
func (s *server) auditMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			return s.routeCall(ctx, next, method, req)
		case "resources/read":
			return s.auditedRead(ctx, next, method, req)
		}
		return next(ctx, method, req)
	}
}

func (s *server) routeCall(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	name := ""
	if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
		name = p.Name
	}
	t, known := s.tools[name]
	kind := mcppolicy.Refusal(s.c, s.l, name)
	if known && kind != "" && kind != errkinds.NotFound {
		if cr, ok := req.(*mcp.CallToolRequest); ok {
			res, err := s.serve(ctx, cr, t)
			if err != nil {
				return nil, err
			}
			return res, nil
		}
	}
	res, err := next(ctx, method, req)
	if kind == errkinds.NotFound {
		rec := s.record(req)
		rec.Tool, rec.Target, rec.Outcome, rec.Kind = "unknown", name, audit.OutcomeNotFound, errkinds.NotFound
		if known {
			// A tool of this surface the caller cannot see (garra_agent
			// without the stdio opt-in) is the one unknown name worth naming.
			rec.Tool, rec.Target = name, ""
		}
		s.o.Audit.Record(rec)
	}
	return res, err
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

func (s *server) auditedRead(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	uri := ""
	if p, ok := req.GetParams().(*mcp.ReadResourceParams); ok && p != nil {
		uri = p.URI
	}
	n := &readNote{}
	start := s.o.Now()
	res, err := next(context.WithValue(ctx, readNoteKey{}, n), method, req)
	d := s.o.Now().Sub(start)
	if !n.set {
		*n = s.unserved(uri)
	}
	rec := s.record(req)
	rec.Resource, rec.Target, rec.Outcome, rec.Kind, rec.Latency = n.resource, n.target, n.outcome, n.kind, d
	if s.local() {
		s.o.Logger.Info("mcp resource read", "resource", n.resource, "outcome", n.outcome)
	} else {
		s.o.Logger.Info("mcp resource read", "caller", s.c.Name, "resource", n.resource, "outcome", n.outcome, "error_kind", n.kind,
			"latency_ms", d.Milliseconds())
	}
	s.o.Audit.Record(rec)
	return res, err
}

// unserved is the note of a read no handler answered: a resource of this
// surface the caller may not see is audited as the refusal it is (and
// answered like a missing one); any other URI is caller text, so it goes
// to the audit only as a pseudonym.
func (s *server) unserved(uri string) readNote {
	resource, target := uri, ""
	if id, ok := strings.CutPrefix(uri, chatURIPrefix); ok && id != "" {
		resource = mcppolicy.ResourceChat
		target, _ = url.PathUnescape(id) // "" when it does not unescape
	}
	if mcppolicy.ResourceOnSurface(s.c, resource) && !mcppolicy.ResourceVisible(s.c, s.l, resource) {
		return readNote{resource: resource, target: target, outcome: audit.OutcomeRefused, kind: errkinds.ToolNotAllowed}
	}
	return readNote{resource: "unknown", target: uri, outcome: audit.OutcomeNotFound, kind: errkinds.NotFound}
}

// maxClientName bounds the client's self-reported name in the audit file.
const maxClientName = 64

// clientName is the caller of the audit file on stdio: the name the MCP
// client gave itself at initialize (self-reported, not authenticated; the
// stdio server has one local user), or "local".
func clientName(req mcp.Request) string {
	var ci *mcp.Implementation
	switch r := req.(type) {
	case *mcp.CallToolRequest:
		if r != nil {
			ci = r.ClientInfo()
		}
	case *mcp.ReadResourceRequest:
		if r != nil {
			ci = r.ClientInfo()
		}
	}
	name := ""
	if ci != nil {
		name = ci.Name
	}
	name = strings.Map(func(c rune) rune {
		if unicode.IsPrint(c) {
			return c
		}
		return -1
	}, name)
	if r := []rune(name); len(r) > maxClientName {
		name = string(r[:maxClientName])
	}
	if strings.TrimSpace(name) == "" {
		return mcppolicy.LocalName
	}
	return name
}
