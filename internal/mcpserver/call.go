package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/llm"
	"github.com/garraia/garra/internal/mcppolicy"
)

// A tool is one MCP tool, declared once for both surfaces.
type tool struct {
	name string
	// describe is the tool as tools/list shows it to s's caller: its
	// schema renders the bounds and defaults in force.
	describe func(s *server) *mcp.Tool
	// prepare decodes and validates the arguments for s's caller. A
	// *mcppolicy.Refused error refuses the call in the tool's envelope;
	// any other is invalid params (-32602) and names the field.
	prepare func(ctx context.Context, s *server, req *mcp.CallToolRequest) (*call, error)
	// refused is the tool's envelope of a refusal.
	refused func(e *ask.Error) *mcp.CallToolResult
	// redactFailure applies the operator's patterns to the error message
	// of a failed run (the gateway's garra_ask error path).
	redactFailure bool
}

// allTools are the tools in registration order; each server keeps those
// on its caller's surface.
var allTools = []*tool{statusTool, listChatsTool, readHistoryTool, pairStatusTool, sendTool, askTool, agentTool}

// A call is a tool call whose arguments passed: what it costs and what it
// runs.
type call struct {
	// budget is charged before run; nil = free. spent is the refusal
	// when it has no room left.
	budget Budget
	spent  errkinds.Kind
	// setting is the config key of budget's limit, for the refusal's
	// message ("" when the limit is fixed).
	setting string
	// quota is the tool the caller's own quota charges ("" = none) and
	// tokens what its first model call may cost at most, held before
	// the run.
	quota  string
	tokens int64
	// run does the work. A *mcppolicy.Refused error refuses the call; any
	// other is invalid params.
	run func(ctx context.Context) (outcome, error)
	// provider and model are the audit line's, for the LLM tools.
	provider, model string
}

// outcome is what a run hands back: its envelope and, when it failed,
// the envelope's error.
type outcome struct {
	envelope func() string
	failure  *ask.Error
	dryRun   bool
}

// callInfo is what the audit line and metrics need from one call.
type callInfo struct {
	outcome  string // ok | error | refused | invalid_params
	kind     errkinds.Kind
	provider string
	model    string
	dryRun   bool
}

// serve is the one path of every tool call, in the specs' order: the
// refusal chain before any argument is read; the arguments, which name the
// field they fail on, and the checks that need them (model, destination);
// the budget, charged only once all of those passed; the run; the
// operator's redaction of what goes back; the audit line.
func (s *server) serve(ctx context.Context, req *mcp.CallToolRequest, t *tool) (*mcp.CallToolResult, error) {
	if s.o.CallContext != nil {
		var cancel context.CancelFunc
		ctx, cancel = s.o.CallContext(ctx, req)
		defer cancel()
	}
	start := s.o.Now()
	res, info, err := s.decide(ctx, t, req)
	s.auditCall(ctx, req, t.name, arguments(req), info, start)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	return res, nil
}

// decide runs every step up to the audit line.
func (s *server) decide(ctx context.Context, t *tool, req *mcp.CallToolRequest) (*mcp.CallToolResult, callInfo, error) {
	if kind := mcppolicy.Refusal(s.c, s.l, t.name); kind != "" {
		return t.refused(refusal(kind)), refusedInfo(kind), nil
	}
	c, err := t.prepare(ctx, s, req)
	if err != nil {
		return s.rejected(t, err, callInfo{})
	}
	info := callInfo{provider: c.provider, model: c.model}
	// The caller's own quota before the shared budget: a caller over its
	// quota must not spend what the others share.
	if c.quota != "" {
		g, r := s.o.Quota.Admit(c.quota, c.tokens)
		if r != nil {
			if s.o.RetryAfter != nil {
				s.o.RetryAfter(req, r.RetryAfter)
			}
			e := refusal(errkinds.OverQuota)
			e.Message, e.Quota, e.RetryAfterSecs = r.Message(), r.Quota, r.RetryAfterSecs()
			return t.refused(e), refusedInfo(errkinds.OverQuota), nil
		}
		defer g.Done()
		if g != nil {
			ctx = llm.WithMeter(ctx, g)
		}
	}
	if c.budget != nil && !c.budget.Take() {
		wait := budgetWait(c.budget)
		if s.o.RetryAfter != nil {
			s.o.RetryAfter(req, wait)
		}
		e := refusal(c.spent)
		e.RetryAfterSecs = wholeSeconds(wait)
		e.Message = budgetSpent(t.name, c.budget.Limit(), c.setting, e.RetryAfterSecs)
		return t.refused(e), refusedInfo(c.spent), nil
	}
	out, err := c.run(ctx)
	if err != nil {
		return s.rejected(t, err, info)
	}
	info.outcome, info.dryRun = audit.OutcomeOK, out.dryRun
	if out.failure != nil {
		if t.redactFailure && s.o.Redactor != nil {
			out.failure.Message = s.o.Redactor.String(out.failure.Message)
		}
		info.outcome, info.kind = audit.OutcomeError, out.failure.Kind
		if out.failure.Kind == errkinds.Cancelled {
			// The caller's doing, not a failure: counted apart in metrics.
			info.outcome = audit.OutcomeCancelled
		}
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out.envelope()}}, IsError: out.failure != nil}, info, nil
}

// rejected answers a call that prepare or run turned down: a refusal in
// the tool's envelope, or invalid params naming the field.
func (s *server) rejected(t *tool, err error, info callInfo) (*mcp.CallToolResult, callInfo, error) {
	if r, ok := errors.AsType[*mcppolicy.Refused](err); ok {
		return t.refused(refusal(r.Kind)), refusedInfo(r.Kind), nil
	}
	info.outcome, info.kind = audit.OutcomeInvalidParams, mcppolicy.InvalidKind(s.c)
	return nil, info, err
}

// arguments are a call's raw arguments.
func arguments(req *mcp.CallToolRequest) json.RawMessage {
	if req == nil || req.Params == nil {
		return nil
	}
	return req.Params.Arguments
}

func refusedInfo(kind errkinds.Kind) callInfo {
	return callInfo{outcome: audit.OutcomeRefused, kind: kind}
}

// refusal is the error half of kind's refusal envelope, with its fixed
// message.
// budgetSpent is a spent budget's refusal message: the limit in force,
// where it is set, and when to try again.
func budgetSpent(tool string, limit int, setting string, retrySecs int) string {
	where := "a fixed limit"
	if setting != "" {
		where = setting
	}
	calls := "calls"
	if limit == 1 {
		calls = "call"
	}
	return fmt.Sprintf("the gateway's budget for %s is spent: %d %s a minute for all callers together (%s); try again in %d s",
		tool, limit, calls, where, retrySecs)
}

// budgetWait is how long until budget has room again: its own answer when
// it can tell (the in-memory and PostgreSQL budgets can), else a whole
// window.
func budgetWait(b Budget) time.Duration {
	if w, ok := b.(interface{ Wait() time.Duration }); ok {
		return w.Wait()
	}
	return time.Minute
}

// wholeSeconds is d rounded up to whole seconds, at least 1: a Retry-After.
func wholeSeconds(d time.Duration) int {
	return max(1, int((d+time.Second-1)/time.Second))
}

func refusal(kind errkinds.Kind) *ask.Error {
	return &ask.Error{Kind: kind, Message: kind.Message()}
}

// refusedAsk is garra.ask.v1's refusal; refusedAgent garra.agent.v1's.
func refusedAsk(e *ask.Error) *mcp.CallToolResult {
	env := ask.Envelope{Error: e}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: env.JSON()}}, IsError: true}
}
