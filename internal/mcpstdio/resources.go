package mcpstdio

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/mcppolicy"
)

// ResourcePolicy is the stdio server's one resource: the operator knobs in
// force, as the GARRAIA_MCP_* variables set them at start.
const ResourcePolicy = "garra://policy"

// SchemaPolicy tags the garra://policy document (shared with the gateway's).
const SchemaPolicy = "garra.policy.v1"

// PolicyView is garra.policy.v1 on stdio. It shows how many file roots
// garra_agent has, never which: the paths name the host's layout (home
// directory, user name), and the model on the other side of the MCP host
// has no need for them; the operator knows them from the environment.
type PolicyView struct {
	Schema       string   `json:"schema"`
	Surface      string   `json:"surface"`
	Tools        []string `json:"tools"`
	ToolsEnabled bool     `json:"tools_enabled"`
	// ModelAllowlist is GARRAIA_MCP_MODEL_ALLOWLIST; empty = any model.
	ModelAllowlist []string `json:"model_allowlist"`
	// MaxTimeoutSecs is GARRAIA_MCP_MAX_TIMEOUT_SECS; 0 = no operator cap.
	MaxTimeoutSecs int `json:"max_timeout_secs"`
	// TimeoutCaps is the effective timeout_secs ceiling of each tool.
	TimeoutCaps map[string]int `json:"timeout_caps"`
	// AllowedDirs counts garra_agent's file roots (GARRAIA_MCP_ALLOWED_DIRS,
	// else agent.file_roots plus the cwd); present with garra_agent only.
	AllowedDirs *int `json:"allowed_dirs,omitempty"`
}

// Policy view of this server.
func (d *dispatcher) policyView() PolicyView {
	p := d.o.Policy
	v := PolicyView{
		Schema: SchemaPolicy, Surface: audit.SurfaceStdio,
		Tools:          append([]string{}, d.tools...),
		ToolsEnabled:   p.EnableTools,
		ModelAllowlist: append([]string{}, p.ModelAllowlist...),
		MaxTimeoutSecs: p.MaxTimeoutSecs,
		TimeoutCaps:    map[string]int{askToolName: mcppolicy.TimeoutBounds(mcppolicy.LocalUser(), d.limits(), mcppolicy.ToolAsk).Cap},
	}
	if d.agentEnabled() {
		v.TimeoutCaps[agentToolName] = mcppolicy.TimeoutBounds(mcppolicy.LocalUser(), d.limits(), mcppolicy.ToolAgent).Cap
		n := d.o.FileRoots
		v.AllowedDirs = &n
	}
	return v
}

func (d *dispatcher) addResources(s *mcp.Server) {
	s.AddResource(&mcp.Resource{URI: ResourcePolicy, Name: "policy", Title: "Operator limits in force", MIMEType: "application/json",
		Description: "The GARRAIA_MCP_* limits this server started with: tools, model allowlist, timeout caps, and how many file roots garra_agent has (garra.policy.v1)."},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			b, err := json.Marshal(d.policyView())
			if err != nil {
				return nil, err
			}
			noteRead(ctx, ResourcePolicy)
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(b)}}}, nil
		})
}

type readNoteKey struct{}

// noteRead tells the audit middleware which resource answered.
func noteRead(ctx context.Context, resource string) {
	if p, ok := ctx.Value(readNoteKey{}).(*string); ok {
		*p = resource
	}
}

// auditMiddleware audits what the tool handlers cannot see: every
// resources/read (an unknown URI included), and calls to tools this server
// does not have (garra_agent without the opt-in is "unknown tool").
func (d *dispatcher) auditMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "resources/read":
			uri := ""
			if p, ok := req.GetParams().(*mcp.ReadResourceParams); ok && p != nil {
				uri = p.URI
			}
			var served string
			start := d.o.Now()
			res, err := next(context.WithValue(ctx, readNoteKey{}, &served), method, req)
			rec := audit.Record{Surface: audit.SurfaceStdio, Caller: clientName(req), Resource: served,
				Outcome: audit.OutcomeOK, Latency: d.o.Now().Sub(start)}
			if served == "" || err != nil {
				// The URI is caller text: it reaches the file only as a pseudonym.
				rec.Resource, rec.Target, rec.Outcome, rec.Kind = "unknown", uri, audit.OutcomeNotFound, errkinds.NotFound
			}
			d.o.Logger.Info("mcp resource read", "resource", rec.Resource, "outcome", rec.Outcome)
			d.o.Audit.Record(rec)
			return res, err
		case "tools/call":
			name := ""
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
				name = p.Name
			}
			res, err := next(ctx, method, req)
			if !slices.Contains(d.tools, name) {
				rec := audit.Record{Surface: audit.SurfaceStdio, Caller: clientName(req), Tool: "unknown", Target: name,
					Outcome: audit.OutcomeNotFound, Kind: errkinds.NotFound}
				if name == agentToolName {
					// The one unknown name worth naming: the opt-in tool, off.
					rec.Tool, rec.Target = agentToolName, ""
				}
				d.o.Audit.Record(rec)
			}
			return res, err
		}
		return next(ctx, method, req)
	}
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
		return "local"
	}
	return name
}
