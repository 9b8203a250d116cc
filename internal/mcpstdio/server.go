// Package mcpstdio is the dispatcher of `garra mcp-server`: it declares the
// tools, validates their arguments, enforces the operator policy and turns
// results into MCP responses. It is deliberately only a dispatcher: it
// writes nothing to stdout, spawns no process and constructs no agent tool;
// audit tests over this package's source keep it that way. The agent's
// machinery is handed in as an AgentRunner built elsewhere.
package mcpstdio

import (
	"context"
	"log/slog"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/errkinds"
)

// ServerName is the MCP implementation name reported at initialize.
const ServerName = "garra"

// Asker is the one-shot core (internal/ask.Core).
type Asker interface {
	Normalize(ask.Request) (ask.Request, error)
	Ask(context.Context, ask.Request) ask.Envelope
}

// Options configures the dispatcher.
type Options struct {
	Version string
	Asker   Asker
	// Agent runs garra_agent; it is registered only when Policy.EnableTools
	// is set and Agent is not nil.
	Agent  AgentRunner
	Policy Policy
	// Logger receives the boot line and one audit line per call; it must
	// write to stderr through the redactor.
	Logger *slog.Logger
	Now    func() time.Time
	// Audit receives one line per tool call, resource read and refusal;
	// nil = no audit file (the stderr line is written either way).
	Audit *audit.Log
	// Defaults are the provider and model a call gets when it names none
	// (the config's llm.provider and llm.model); tools/list shows them.
	Defaults Defaults
	// FileRoots is how many roots garra_agent's file tools resolved, for
	// garra://policy (the paths themselves are not shown).
	FileRoots int
	// Middleware is installed outermost, after the dispatcher's own (the
	// tracing of a traced process); RecordKind is told each failed call's
	// error kind (the span's error.type). Both optional.
	Middleware []mcp.Middleware
	RecordKind func(ctx context.Context, kind errkinds.Kind)
}

// New builds the MCP server: garra_ask always, garra_agent only on opt-in,
// so that without it tools/list is exactly the garra_ask-only surface.
func New(o Options) *mcp.Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := mcp.NewServer(&mcp.Implementation{Name: ServerName, Version: o.Version}, &mcp.ServerOptions{
		Instructions: "Garra: garra_ask sends one question to an LLM provider and returns a garra.ask.v1 JSON envelope. garra://policy shows the operator's limits in force.",
		Logger:       o.Logger,
		// The tools, resources and prompts are fixed when the server
		// starts, so no list_changed notification ever comes and none is
		// promised (the SDK's default would say listChanged: true).
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, //nolint:staticcheck // SA1019: deprecated at 2026-07-28; kept for 2025-11-25 clients, as the SDK's default had it
			Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{}, Prompts: &mcp.PromptCapabilities{}},
	})
	d := &dispatcher{o: o, tools: []string{askToolName}}
	s.AddTool(askTool(d.schemaDefaults(ask.DefaultTimeoutSecs, ask.MaxTimeoutSecs)), d.handleAsk)
	if d.agentEnabled() {
		s.AddTool(agentTool(d.schemaDefaults(agentDefaultTimeoutSecs, agentMaxTimeoutSecs)), d.handleAgent)
		d.tools = append(d.tools, agentToolName)
	}
	d.addResources(s)
	d.addPrompts(s)
	s.AddReceivingMiddleware(d.auditMiddleware)
	for _, m := range o.Middleware {
		s.AddReceivingMiddleware(m)
	}
	return s
}

type dispatcher struct {
	o     Options
	tools []string // the registered tools, in tools/list order
}

func (d *dispatcher) agentEnabled() bool { return d.o.Policy.EnableTools && d.o.Agent != nil }

// audit writes the audit lines for one call, to stderr and to the audit
// file: never the prompt or the answer.
func (d *dispatcher) audit(ctx context.Context, r *mcp.CallToolRequest, tool, outcome string, kind errkinds.Kind, provider, model string, start time.Time) {
	if d.o.RecordKind != nil && kind != "" {
		d.o.RecordKind(ctx, kind)
	}
	lat := d.o.Now().Sub(start)
	d.o.Logger.Info("mcp call",
		"tool", tool, "outcome", outcome, "error_kind", kind,
		"provider", provider, "model", model,
		"latency_ms", lat.Milliseconds())
	d.o.Audit.Record(audit.Record{Surface: audit.SurfaceStdio, Caller: clientName(r), Tool: tool,
		Outcome: outcome, Kind: kind, Provider: provider, Model: model, Latency: lat})
}
