package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/agent"
	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/llm"
	"github.com/garraia/garra/internal/strictargs"
	"github.com/garraia/garra/internal/telemetry"
)

// toolDescriptors are the seven tools as tools/list shows them.
func (g *policy) toolDescriptors() map[string]*mcp.Tool {
	m := g.cfg.Gateway.MCPHTTP
	return map[string]*mcp.Tool{
		ToolStatus: {Name: ToolStatus, Title: "Gateway status", InputSchema: statusSchema,
			Description: "Version, uptime, channels and how many conversations this Garra holds (garra.mcp.v1).",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		ToolListChats: {Name: ToolListChats, Title: "List conversations", InputSchema: listChatsSchema,
			Description: "Live conversations, newest first, optionally filtered by channel. Each row's chat field is the argument to garra_read_history (garra.mcp.v1).",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		ToolReadHistory: {Name: ToolReadHistory, Title: "Read a conversation", InputSchema: readHistorySchema(m.MaxHistoryMessages),
			Description: "The last N messages of one conversation, secrets redacted (garra.mcp.v1 with redacted: true).",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		ToolPairStatus: {Name: ToolPairStatus, Title: "Pairing status", InputSchema: pairSchema,
			Description: "Channel pairing and allowlist state, without pairing codes (garra.mcp.v1).",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		ToolSendMessage: {Name: ToolSendMessage, Title: "Send a message", InputSchema: sendSchema,
			Description: "Send a message on Telegram to a destination the operator approved in advance. Shares one budget of 5 sends per minute across the gateway (garra.mcp.v1).",
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}},
		ToolAsk: {Name: ToolAsk, Title: "Ask the LLM", InputSchema: askSchema(g.cfg.LLM.Provider, g.cfg.LLM.Model),
			Description: "Ask this Garra's LLM one question; spends the owner's provider key within a per-minute budget (garra.ask.v1).",
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(true)}},
		ToolAgent: {Name: ToolAgent, Title: "Delegate a task to the agent", InputSchema: agentSchema(m.AgentMaxSeconds, g.cfg.LLM.Provider, g.cfg.LLM.Model),
			Description: "Run a task with the Garra agent and its tools in this caller's own workspace; returns the answer and a summary of every tool used (garra.agent.v1).",
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)}},
	}
}

// newMCPServer builds the server a caller talks to: all seven tools are
// registered (a hidden tool called by name is refused with its stable kind,
// never "unknown"), and tools/list is filtered to what the caller may call.
func (g *policy) newMCPServer(c Caller) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "garra-gateway", Version: g.version}, &mcp.ServerOptions{
		Instructions: "Garra gateway: tools/list and resources/list show exactly what this caller may use; garra://policy is its own policy.",
		Logger:       g.sdkLog,
		// Every list and read is this caller's own view.
		SetCacheable: func(_ context.Context, _ mcp.Request, c *mcp.Cacheable) { c.CacheScope = "private" },
		// A caller's lists never change under this server (a config reload
		// builds new servers), and a stateless server could not announce a
		// change anyway: no listChanged (the SDK's default would say true).
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, //nolint:staticcheck // SA1019: deprecated at 2026-07-28; kept for 2025-11-25 clients, as the SDK's default had it
			Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{}, Prompts: &mcp.PromptCapabilities{}},
	})
	descs := g.toolDescriptors()
	handlers := map[string]func(context.Context, Caller, json.RawMessage) (*mcp.CallToolResult, callInfo, error){
		ToolStatus: g.callStatus, ToolListChats: g.callListChats, ToolReadHistory: g.callReadHistory,
		ToolPairStatus: g.callPairStatus, ToolSendMessage: g.callSend, ToolAsk: g.callAsk, ToolAgent: g.callAgent,
	}
	for _, name := range AllTools {
		h := handlers[name]
		s.AddTool(descs[name], func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			ctx, cancel := g.reqCtx.CallContext(ctx, req)
			defer cancel()
			ctx, stop := g.untilHardStop(ctx)
			defer stop()
			return g.dispatch(ctx, c, name, req.Params.Arguments, h)
		})
	}
	g.addResources(s, c)
	g.addPrompts(s, c)
	visible := Visible(c, g.switches)
	s.AddReceivingMiddleware(g.resourceMiddleware(c))
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lt, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				lt.Tools = slices.DeleteFunc(lt.Tools, func(t *mcp.Tool) bool { return !slices.Contains(visible, t.Name) })
			}
			return res, err
		}
	})
	if g.tracing != nil {
		// Last, so outermost: the span covers the filters above too.
		s.AddReceivingMiddleware(telemetry.ServerMiddleware(g.tracing, telemetry.TransportTCP))
	}
	return s
}

// callInfo is what the audit line and metrics need from one call.
type callInfo struct {
	outcome  string // ok | error | refused | invalid_params
	kind     errkinds.Kind
	provider string
	model    string
	dryRun   bool // a garra_send_message dry run: checked, not sent
}

// dispatch runs the pre-argument policy, the handler, and the audit line.
func (g *policy) dispatch(ctx context.Context, c Caller, tool string, args json.RawMessage,
	h func(context.Context, Caller, json.RawMessage) (*mcp.CallToolResult, callInfo, error)) (*mcp.CallToolResult, error) {
	start := g.now()
	var (
		res  *mcp.CallToolResult
		info callInfo
		err  error
	)
	if kind := Refusal(c, g.switches, tool); kind != "" {
		res, info = g.refuse(tool, kind)
	} else {
		res, info, err = h(ctx, c, args)
		if err != nil {
			info = callInfo{outcome: "invalid_params", kind: errkinds.InvalidParams, provider: info.provider, model: info.model}
		}
	}
	d := g.now().Sub(start)
	telemetry.RecordErrorKind(ctx, info.kind)
	g.metrics.observe(tool, info.outcome, info.kind, d)
	rec := audit.Record{Surface: audit.SurfaceHTTP, Caller: c.Name, Tool: tool, Target: auditTarget(tool, args),
		Outcome: info.outcome, Kind: info.kind, DryRun: info.dryRun,
		Auth: c.Auth, Identity: c.Identity, IdentityPersonal: c.IdentityPersonal}
	attrs := []any{"caller", c.Name, "tool", tool, "outcome", info.outcome, "error_kind", info.kind}
	if info.dryRun {
		attrs = append(attrs, "dry_run", true)
	}
	if kindOnly(tool, info) {
		rec.KindOnly = true
	} else {
		rec.Provider, rec.Model, rec.Latency = info.provider, info.model, d
		attrs = append(attrs, "provider", info.provider, "model", info.model, "latency_ms", d.Milliseconds())
	}
	g.log.Info("mcp call", attrs...)
	g.audit.Record(rec)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	return res, nil
}

// kindOnly reports whether the log and audit lines of a call carry its
// kind alone: a garra_ask that did not succeed (refused, invalid, failed)
// logs neither provider nor model nor latency, so its lines say no more
// about the request than the stable kind does.
func kindOnly(tool string, info callInfo) bool {
	return tool == ToolAsk && info.outcome != audit.OutcomeOK
}

// auditTarget is the conversation a call touches, for the audit file (which
// writes only its pseudonym): read_history's chat, send_message's
// destination as a conversation id. Best effort over raw arguments.
func auditTarget(tool string, args json.RawMessage) string {
	if tool != ToolReadHistory && tool != ToolSendMessage {
		return ""
	}
	var a struct {
		Chat    string `json:"chat"`
		Channel string `json:"channel"`
		ChatID  string `json:"chat_id"`
	}
	_ = json.Unmarshal(args, &a)
	if tool == ToolReadHistory {
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

// refuse answers a refused call in the envelope of its tool.
func (g *policy) refuse(tool string, kind errkinds.Kind) (*mcp.CallToolResult, callInfo) {
	info := callInfo{outcome: "refused", kind: kind}
	switch tool {
	case ToolAsk:
		env := ask.Envelope{Error: &ask.Error{Kind: kind, Message: kind.Message()}}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: env.JSON()}}, IsError: true}, info
	case ToolAgent:
		env := agent.Envelope{ToolCalls: []agent.ToolCallSummary{}, Error: &ask.Error{Kind: kind, Message: kind.Message()}}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: env.JSON()}}, IsError: true}, info
	}
	return refusedResult(tool, kind), info
}

var okInfo = callInfo{outcome: "ok"}

func (g *policy) callStatus(ctx context.Context, c Caller, raw json.RawMessage) (*mcp.CallToolResult, callInfo, error) {
	if err := strictargs.Decode(raw, &noArgs{}); err != nil {
		return nil, callInfo{}, err
	}
	return okResult(ToolStatus, g.statusData(ctx, c)), okInfo, nil
}

// statusData is garra_status's data (and garra://status's) for c. The
// conversation count is of those in c's chat scope: an orchestrator learns
// nothing, not even how many, about conversations it may not see.
func (g *policy) statusData(ctx context.Context, c Caller) map[string]any {
	convs, err := g.store.Conversations(ctx, "")
	if err != nil {
		g.log.Error("conversation store", "error", err)
	}
	convs = slices.DeleteFunc(convs, func(cv chat.Conversation) bool { return !ChatInScope(c, cv.ID) })
	channels := []map[string]any{}
	for _, ch := range []string{chat.ChannelTelegram, chat.ChannelWeb} {
		channels = append(channels, map[string]any{"name": ch, "online": ch == chat.ChannelWeb || g.sender.Online(ch)})
	}
	return map[string]any{
		"version":       g.version,
		"uptime_secs":   int64(g.now().Sub(g.started).Seconds()),
		"channels":      channels,
		"conversations": len(convs),
	}
}

func (g *policy) callListChats(ctx context.Context, c Caller, raw json.RawMessage) (*mcp.CallToolResult, callInfo, error) {
	var a listChatsArgs
	if err := strictargs.Decode(raw, &a); err != nil {
		return nil, callInfo{}, err
	}
	channel := deref(a.Channel)
	if channel != "" && channel != chat.ChannelTelegram && channel != chat.ChannelWeb {
		return nil, callInfo{}, errors.New("channel: must be telegram or web")
	}
	rows, err := g.scopedChats(ctx, c, channel)
	if err != nil {
		res, info := g.refuse(ToolListChats, errkinds.Unavailable)
		return res, info, nil
	}
	return okResult(ToolListChats, map[string]any{"chats": rows}), okInfo, nil
}

// scopedChats is the conversations c may see, titles redacted (garra_list_chats
// and garra://chats). An error means the store is unavailable (logged).
func (g *policy) scopedChats(ctx context.Context, c Caller, channel string) ([]chat.Conversation, error) {
	convs, err := g.store.Conversations(ctx, channel)
	if err != nil {
		g.log.Error("conversation store", "error", err)
		return nil, err
	}
	rows := []chat.Conversation{}
	for _, cv := range convs {
		if ChatInScope(c, cv.ID) {
			cv.Title = g.builtinRed.String(cv.Title)
			rows = append(rows, cv)
		}
	}
	return rows, nil
}

func (g *policy) callReadHistory(ctx context.Context, c Caller, raw json.RawMessage) (*mcp.CallToolResult, callInfo, error) {
	var a readHistoryArgs
	if err := strictargs.Decode(raw, &a); err != nil {
		return nil, callInfo{}, err
	}
	ceiling := g.cfg.Gateway.MCPHTTP.MaxHistoryMessages
	if a.Chat == nil || *a.Chat == "" {
		return nil, callInfo{}, errors.New("chat: required")
	}
	limit := ceiling
	if a.Limit != nil {
		if *a.Limit < 1 || *a.Limit > ceiling {
			return nil, callInfo{}, fmt.Errorf("limit: must be in [1, %d]", ceiling)
		}
		limit = *a.Limit
	}
	msgs, kind := g.scopedHistory(ctx, c, *a.Chat, limit)
	if kind != "" {
		res, info := g.refuse(ToolReadHistory, kind)
		return res, info, nil
	}
	return okResult(ToolReadHistory, map[string]any{"messages": msgs, "redacted": true}), okInfo, nil
}

// scopedHistory is the last limit messages of conversation id, redacted,
// for c (garra_read_history and garra://chats/{chat}); kind is not_found or
// unavailable on failure. Out of scope reads exactly like missing: no
// existence oracle.
func (g *policy) scopedHistory(ctx context.Context, c Caller, id string, limit int) ([]chat.Message, errkinds.Kind) {
	if !ChatInScope(c, id) {
		return nil, errkinds.NotFound
	}
	msgs, err := g.store.History(ctx, id, limit)
	if errors.Is(err, chat.ErrNotFound) {
		return nil, errkinds.NotFound
	}
	if err != nil {
		g.log.Error("conversation store", "error", err)
		return nil, errkinds.Unavailable
	}
	for i := range msgs {
		msgs[i].Text = g.builtinRed.String(msgs[i].Text)
	}
	if msgs == nil {
		msgs = []chat.Message{}
	}
	return msgs, ""
}

func (g *policy) callPairStatus(ctx context.Context, _ Caller, raw json.RawMessage) (*mcp.CallToolResult, callInfo, error) {
	if err := strictargs.Decode(raw, &noArgs{}); err != nil {
		return nil, callInfo{}, err
	}
	st, err := g.store.Pairing(ctx)
	if err != nil {
		g.log.Error("pairing store", "error", err)
		res, info := g.refuse(ToolPairStatus, errkinds.Unavailable)
		return res, info, nil
	}
	if st == nil {
		st = []chat.PairStatus{}
	}
	return okResult(ToolPairStatus, map[string]any{"channels": st}), okInfo, nil
}

func (g *policy) callSend(ctx context.Context, c Caller, raw json.RawMessage) (*mcp.CallToolResult, callInfo, error) {
	var a sendArgs
	if err := strictargs.Decode(raw, &a); err != nil {
		return nil, callInfo{}, err
	}
	channel := deref(a.Channel)
	if channel == "" {
		channel = chat.ChannelTelegram
	}
	switch {
	case a.ChatID == nil || strings.TrimSpace(*a.ChatID) == "":
		return nil, callInfo{}, errors.New("chat_id: required")
	case a.Text == nil || strings.TrimSpace(*a.Text) == "":
		return nil, callInfo{}, errors.New("text: required and not empty")
	case len([]rune(*a.Text)) > 4096:
		return nil, callInfo{}, errors.New("text: at most 4096 characters")
	}
	refuse := func(kind errkinds.Kind) (*mcp.CallToolResult, callInfo, error) {
		res, info := g.refuse(ToolSendMessage, kind)
		return res, info, nil
	}
	if kind := SendTargetRefusal(c, channel, strings.TrimSpace(*a.ChatID), g.cfg.Channels.Telegram.ProactiveChatIDs); kind != "" {
		return refuse(kind)
	}
	if !g.sender.Online(channel) {
		return refuse(errkinds.ChannelOffline)
	}
	chatID, text := strings.TrimSpace(*a.ChatID), g.red.String(*a.Text)
	if deref(a.DryRun) {
		// Every check above ran; nothing is sent and the budget is only
		// read. Echoing the destination is safe here: it is approved and
		// in the caller's scope, and the caller named it.
		return okResult(ToolSendMessage, map[string]any{
			"dry_run": true, "delivered": false, "channel": channel, "chat_id": chatID,
			"chat": chat.ConvID(channel, chatID), "text": text, "send_budget_remaining": g.sendBudget.Remaining(),
		}), callInfo{outcome: audit.OutcomeOK, dryRun: true}, nil
	}
	if !g.sendBudget.Take() {
		return refuse(errkinds.RateLimited)
	}
	if err := g.sender.Send(ctx, channel, chatID, text); err != nil {
		// The channel's own text stays in the log.
		g.log.Warn("send failed", "caller", c.Name, "channel", channel, "error", err)
		return refuse(errkinds.DeliveryFailed)
	}
	return okResult(ToolSendMessage, map[string]any{"delivered": true, "channel": channel}), okInfo, nil
}

// commonLLMArgs validates what garra_ask and garra_agent share. Provider
// aliases are not reachable through the bridge: only the four kinds.
func (g *policy) commonLLMArgs(a askArgs) (ask.Request, error) {
	if a.Message == nil {
		return ask.Request{}, errors.New("message: required")
	}
	req := ask.Request{Message: *a.Message, Provider: deref(a.Provider), Model: deref(a.Model), SystemPrompt: deref(a.SystemPrompt)}
	if a.Provider != nil {
		if _, err := llm.ParseKind(*a.Provider); err != nil {
			return req, fmt.Errorf("provider: %q is not one of ollama, anthropic, openai, openrouter", *a.Provider)
		}
	}
	if a.Model != nil && *a.Model == "" {
		return req, errors.New("model: must not be empty")
	}
	return g.askCore.Normalize(req)
}

func (g *policy) callAsk(ctx context.Context, _ Caller, raw json.RawMessage) (*mcp.CallToolResult, callInfo, error) {
	var a askArgs
	if err := strictargs.Decode(raw, &a); err != nil {
		return nil, callInfo{}, err
	}
	if a.TimeoutSecs != nil && (*a.TimeoutSecs < ask.MinTimeoutSecs || *a.TimeoutSecs > ask.MaxTimeoutSecs) {
		return nil, callInfo{}, fmt.Errorf("timeout_secs: must be in [%d, %d]", ask.MinTimeoutSecs, ask.MaxTimeoutSecs)
	}
	req, err := g.commonLLMArgs(a)
	if err != nil {
		return nil, callInfo{}, err
	}
	if a.TimeoutSecs != nil {
		req.TimeoutSecs = *a.TimeoutSecs
	}
	if !ModelAllowed(g.cfg.Gateway.MCPHTTP.AskAllowedModels, g.cfg.LLM.Model, req.Model) {
		res, info := g.refuse(ToolAsk, errkinds.ModelNotAllowed)
		return res, info, nil
	}
	if !g.askBudget.Take() {
		res, info := g.refuse(ToolAsk, errkinds.OverBudget)
		return res, info, nil
	}
	env := g.askCore.Ask(ctx, req)
	info := callInfo{outcome: "ok", provider: req.Provider, model: req.Model}
	if !env.OK {
		// The error path gets the operator's patterns on top of the built-ins.
		env.Error.Message = g.red.String(env.Error.Message)
		info.outcome, info.kind = "error", env.Error.Kind
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: env.JSON()}}, IsError: !env.OK}, info, nil
}

func (g *policy) callAgent(ctx context.Context, c Caller, raw json.RawMessage) (*mcp.CallToolResult, callInfo, error) {
	var a askArgs
	if err := strictargs.Decode(raw, &a); err != nil {
		return nil, callInfo{}, err
	}
	maxSecs := g.cfg.Gateway.MCPHTTP.AgentMaxSeconds
	timeout := maxSecs
	if a.TimeoutSecs != nil {
		if *a.TimeoutSecs < config.MinAgentMaxSeconds || *a.TimeoutSecs > maxSecs {
			return nil, callInfo{}, fmt.Errorf("timeout_secs: must be in [%d, %d] (agent_max_seconds)", config.MinAgentMaxSeconds, maxSecs)
		}
		timeout = *a.TimeoutSecs
	}
	a.TimeoutSecs = nil
	req, err := g.commonLLMArgs(a)
	if err != nil {
		return nil, callInfo{}, err
	}
	if !ModelAllowed(g.cfg.Gateway.MCPHTTP.AskAllowedModels, g.cfg.LLM.Model, req.Model) {
		res, info := g.refuse(ToolAgent, errkinds.ModelNotAllowed)
		return res, info, nil
	}
	if !g.agentBudget.Take() {
		res, info := g.refuse(ToolAgent, errkinds.OverBudget)
		return res, info, nil
	}
	env := g.runAgent(ctx, c, req, time.Duration(timeout)*time.Second)
	info := callInfo{outcome: "ok", provider: req.Provider, model: req.Model}
	if !env.OK {
		info.outcome, info.kind = "error", env.Error.Kind
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: env.JSON()}}, IsError: !env.OK}, info, nil
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func ptr[T any](v T) *T { return &v }
