// Package agent is Garra's agent loop: one task, one fresh session, a model
// that may call tools, and a garra.agent.v1 envelope at the end. The stdio
// MCP server (garra_agent) and the HTTP gateway share it.
//
// The loop knows tools only through tools.Executor. On the gateway the
// executor runs them in another pod, so nothing here assumes a tool runs in
// this process, is fast, or honours cancellation: the deadline is enforced by
// the loop itself.
//
// Decisions, in one place:
//   - Request.Timeout is one deadline over the whole run: listing the tools,
//     every model round trip and every tool call. Hitting it anywhere ends
//     the run with kind timeout; a tool call it interrupts is reported with
//     success false. The loop returns as soon as the deadline passes, even
//     if the provider or the executor does not (their goroutine is left to
//     finish against a cancelled context and its result is dropped).
//   - A tool refusal (Result.IsError) is fed back to the model, which may
//     adapt; the call is reported with success false and the run goes on.
//   - A tool name the model invents (not listed by Executor.Tools, or
//     answered with tools.ErrUnknownTool) is fed back the same way, as an
//     error result naming the real tools, and counted as a failed call.
//   - Any other Executor error (sandbox unreachable, transport failure) ends
//     the run: kind provider_error, the call reported with success false.
//     The model could not do anything useful about it.
//   - Provider errors end the run: kind provider_error (timeout when the
//     SDK reports a deadline), message redacted.
//   - A run whose caller cancels ctx ends with kind cancelled and the
//     message "agent run cancelled".
//   - MaxTurns bounds model calls. When the last allowed call still asks
//     for tools, those calls are not run and the run ends with kind
//     provider_error ("no final answer after N model turns"); the garra.ask.v1
//     kinds have no better label and the model, not the caller, is at fault.
//   - Request.OnToolCall, when set, is told of each tool call as it starts:
//     its step (1 for the run's first call, counting the calls tool_calls
//     will list, invented names included) and its name as the envelope shows
//     it, never its arguments or output. It runs on the loop, before the
//     call; the deadline still ends the run if it blocks.
//   - Redaction: the answer, every error message and every tool summary are
//     redacted; the task message and system prompt are redacted before they
//     are sent to the model. Tool outputs go to the model unredacted (a
//     file read and written back must round-trip), but never to the host:
//     the envelope carries only a summary, redacted before it is cut.
package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/llm"
	"github.com/garraia/garra/internal/redact"
	"github.com/garraia/garra/internal/tools"
)

// Defaults of a Runner and Request.
const (
	// DefaultMaxTurns is the model-call budget of one run when
	// Runner.MaxTurns is zero.
	DefaultMaxTurns = 32
	// DefaultSessionPrefix names stdio sessions: "mcp-<uuid>".
	DefaultSessionPrefix = "mcp"
	// SummaryMaxRunes caps a tool summary, the ellipsis excluded.
	SummaryMaxRunes = 200
	// maxToolNameRunes caps a tool name echoed into a summary; the model
	// chooses it and may send anything.
	maxToolNameRunes = 64
)

// Request is one agent task. The surface has validated and defaulted it.
type Request struct {
	// Message is the task.
	Message string
	// Provider is the provider name reported in the envelope; the Runner's
	// Provider is the client actually used.
	Provider string
	// Model is the model sent to the provider.
	Model string
	// SystemPrompt replaces the generated DefaultSystemPrompt when not "".
	SystemPrompt string
	// Environment, when not "", is added to the generated prompt as its
	// own paragraph: what the tools run on (the sandbox's toolchain), so
	// the model need not guess. A caller's SystemPrompt is left as given.
	Environment string
	// Timeout bounds the whole run: every model round trip and every tool
	// call. Zero adds no deadline of its own (ctx's still applies).
	Timeout time.Duration
	// SessionPrefix names the session: "<prefix>-<id>". "" means
	// DefaultSessionPrefix; the gateway passes "mcp-http-<orchestrator>".
	SessionPrefix string
	// OnToolCall, when not nil, observes the run's tool calls (the MCP
	// surfaces turn them into progress notifications).
	OnToolCall ToolObserver
}

// ToolObserver is told that the run's step-th tool call (counted from 1)
// is starting, with the tool's name as the envelope will show it: redacted,
// one line, cut. It never sees the arguments or the output, which may carry
// secrets.
type ToolObserver func(ctx context.Context, step int, tool string)

// Runner runs agent tasks with one provider and one executor. Its fields are
// read-only once Run is called; a Runner is safe for concurrent Runs if its
// Provider and Executor are.
type Runner struct {
	// Provider answers model turns. Required.
	Provider llm.Provider
	// Executor lists and runs the tools; nil means no tools at all.
	Executor tools.Executor
	// Redactor cleans everything the envelope carries; nil means
	// redact.Default().
	Redactor *redact.Redactor
	// MaxTurns is the model-call budget; 0 means DefaultMaxTurns.
	MaxTurns int
	// Now is the clock for latency and durations; nil means time.Now.
	Now func() time.Time
	// NewID makes the session id suffix; nil means a random UUID.
	NewID func() string
}

// Run executes req and returns its envelope. It never returns an error: every
// failure is an envelope with ok false, a redacted message, and the tool
// calls made so far.
func (r *Runner) Run(ctx context.Context, req Request) Envelope {
	x := &run{r: r, req: req, red: r.redactor(), start: r.now()}
	prefix := req.SessionPrefix
	if prefix == "" {
		prefix = DefaultSessionPrefix
	}
	x.sessionID = prefix + "-" + r.newID()
	if r.Provider == nil {
		return x.fail(errkinds.ProviderError, "no model provider configured")
	}
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	return x.loop(ctx)
}

// run is the state of one Run.
type run struct {
	r         *Runner
	req       Request
	red       *redact.Redactor
	start     time.Time
	sessionID string
	calls     []ToolCallSummary
}

func (x *run) loop(ctx context.Context) Envelope {
	defs, known, names, env, failed := x.listTools(ctx)
	if failed {
		return env
	}
	system := x.req.SystemPrompt
	if system == "" {
		system = DefaultSystemPrompt(names)
		if x.req.Environment != "" {
			system += "\n\n" + x.req.Environment
		}
	}
	llmReq := llm.Request{
		Model:    x.req.Model,
		System:   x.red.String(system),
		Messages: []llm.Message{{Role: llm.RoleUser, Content: x.red.String(x.req.Message)}},
		Tools:    defs,
	}
	maxTurns := x.r.MaxTurns
	if maxTurns <= 0 {
		maxTurns = DefaultMaxTurns
	}
	for turn := 1; ; turn++ {
		resp, err := await(ctx, func() (*llm.Response, error) {
			return x.r.Provider.Complete(ctx, llmReq)
		})
		if err != nil {
			return x.modelFailed(ctx, turn, err)
		}
		if resp == nil {
			return x.fail(errkinds.ProviderError, fmt.Sprintf("model turn %d: empty response", turn))
		}
		if len(resp.ToolCalls) == 0 {
			return x.succeed(resp.Text)
		}
		if turn >= maxTurns {
			return x.fail(errkinds.ProviderError, fmt.Sprintf(
				"agent stopped: no final answer after %d model turns (the model kept calling tools)", maxTurns))
		}
		llmReq.Messages = append(llmReq.Messages, llm.Message{
			Role:      llm.RoleAssistant,
			Content:   resp.Text,
			ToolCalls: resp.ToolCalls,
		})
		for _, tc := range resp.ToolCalls {
			if ctx.Err() != nil {
				return x.interrupted(ctx, "before running tool "+x.toolName(tc.Name))
			}
			msg, env, stop := x.callTool(ctx, known, names, tc)
			if stop {
				return env
			}
			llmReq.Messages = append(llmReq.Messages, msg)
		}
	}
}

// listTools asks the executor for its tools. failed reports that env ends
// the run.
func (x *run) listTools(ctx context.Context) (defs []llm.ToolDef, known map[string]bool, names []string, env Envelope, failed bool) {
	known = map[string]bool{}
	if x.r.Executor == nil {
		return nil, known, nil, Envelope{}, false
	}
	list, err := await(ctx, func() ([]tools.Tool, error) { return x.r.Executor.Tools(ctx) })
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, nil, x.interrupted(ctx, "while listing the tools"), true
		}
		return nil, nil, nil, x.fail(errkinds.ProviderError, "list tools: "+err.Error()), true
	}
	for _, t := range list {
		if known[t.Name] {
			continue
		}
		known[t.Name] = true
		names = append(names, t.Name)
		defs = append(defs, llm.ToolDef{Name: t.Name, Description: t.Description, Parameters: t.InputSchema})
	}
	return defs, known, names, Envelope{}, false
}

// callTool runs one tool call and returns the tool message to feed back, or
// stop with the envelope that ends the run.
func (x *run) callTool(ctx context.Context, known map[string]bool, names []string, tc llm.ToolCall) (msg llm.Message, env Envelope, stop bool) {
	t0 := x.r.now()
	if x.observe(ctx, tc.Name); ctx.Err() != nil {
		x.recordRaw(tc.Name, t0, false, "interrupted: "+ctxWord(ctx))
		return llm.Message{}, x.interrupted(ctx, "before running tool "+x.toolName(tc.Name)), true
	}
	unknown := func() (llm.Message, Envelope, bool) {
		out := fmt.Sprintf("unknown tool %q: this session has no such tool", tc.Name)
		if len(names) > 0 {
			out += "; the available tools are " + strings.Join(names, ", ")
		}
		x.record(tc.Name, t0, false, out)
		return llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: out, IsError: true}, Envelope{}, false
	}
	if !known[tc.Name] {
		return unknown()
	}
	res, err := await(ctx, func() (tools.Result, error) {
		return x.r.Executor.Call(ctx, tc.Name, tc.Arguments)
	})
	if err != nil {
		switch {
		case ctx.Err() != nil:
			x.recordRaw(tc.Name, t0, false, "interrupted: "+ctxWord(ctx))
			return llm.Message{}, x.interrupted(ctx, "while running tool "+x.toolName(tc.Name)), true
		case errors.Is(err, tools.ErrUnknownTool):
			return unknown()
		default:
			x.record(tc.Name, t0, false, "executor failed: "+err.Error())
			return llm.Message{}, x.fail(errkinds.ProviderError, fmt.Sprintf("tool %s: executor failed: %v", x.toolName(tc.Name), err)), true
		}
	}
	x.record(tc.Name, t0, !res.IsError, res.Output)
	return llm.Message{Role: llm.RoleTool, ToolCallID: tc.ID, Content: res.Output, IsError: res.IsError}, Envelope{}, false
}

// observe tells OnToolCall about the call about to start; its step is the
// index it will have in tool_calls, plus one.
func (x *run) observe(ctx context.Context, name string) {
	if x.req.OnToolCall == nil {
		return
	}
	step, tool := len(x.calls)+1, x.toolName(name)
	_, _ = await(ctx, func() (struct{}, error) {
		x.req.OnToolCall(ctx, step, tool)
		return struct{}{}, nil
	})
}

// record appends a summary of a finished call; output is redacted and cut.
func (x *run) record(name string, t0 time.Time, ok bool, output string) {
	x.recordRaw(name, t0, ok, Summarize(x.red, output))
}

func (x *run) recordRaw(name string, t0 time.Time, ok bool, summary string) {
	x.calls = append(x.calls, ToolCallSummary{
		Name:       x.toolName(name),
		DurationMS: max(x.r.now().Sub(t0).Milliseconds(), 0),
		Success:    ok,
		Summary:    summary,
	})
}

// toolName is a model-chosen tool name made safe to show.
func (x *run) toolName(name string) string {
	return cut(oneLine(x.red.String(name)), maxToolNameRunes)
}

func (x *run) modelFailed(ctx context.Context, turn int, err error) Envelope {
	if ctx.Err() != nil {
		return x.interrupted(ctx, "waiting for the model")
	}
	if ask.ErrorKind(err) == errkinds.Timeout {
		return x.fail(errkinds.Timeout, fmt.Sprintf("model turn %d timed out: %v", turn, err))
	}
	if e := ask.QuotaError(err); e != nil {
		// The caller's token quota stopped the run before this turn
		// was sent; the envelope says which quota and when to retry.
		env := x.fail(errkinds.OverQuota, fmt.Sprintf("model turn %d: %s", turn, e.Message))
		env.Error.Quota, env.Error.RetryAfterSecs = e.Quota, e.RetryAfterSecs
		return env
	}
	return x.fail(errkinds.ProviderError, fmt.Sprintf("model turn %d: %v", turn, err))
}

// interrupted is the envelope of a run whose ctx ended; where says what the
// loop was doing.
func (x *run) interrupted(ctx context.Context, where string) Envelope {
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return x.fail(errkinds.Cancelled, "agent run cancelled "+where)
	}
	limit := "its deadline"
	if x.req.Timeout > 0 {
		limit = formatTimeout(x.req.Timeout)
	}
	return x.fail(errkinds.Timeout, fmt.Sprintf("agent run did not finish within %s (timed out %s)", limit, where))
}

func (x *run) succeed(answer string) Envelope {
	return Envelope{
		OK:        true,
		Answer:    x.red.String(answer),
		Provider:  x.req.Provider,
		Model:     x.req.Model,
		LatencyMS: x.r.now().Sub(x.start).Milliseconds(),
		SessionID: x.sessionID,
		ToolCalls: x.toolCalls(),
	}
}

func (x *run) fail(kind errkinds.Kind, msg string) Envelope {
	return Envelope{
		Provider:  x.req.Provider,
		Model:     x.req.Model,
		LatencyMS: x.r.now().Sub(x.start).Milliseconds(),
		SessionID: x.sessionID,
		ToolCalls: x.toolCalls(),
		Error:     &ask.Error{Kind: kind, Message: x.red.String(msg)},
	}
}

func (x *run) toolCalls() []ToolCallSummary {
	if x.calls == nil {
		return []ToolCallSummary{}
	}
	return x.calls
}

// Summarize is the envelope's view of a tool output: redacted first (so a
// secret cut in half cannot slip past the patterns), then flattened to one
// line without control characters, then cut to SummaryMaxRunes with "…".
// An empty output reads "(no output)".
func Summarize(red *redact.Redactor, output string) string {
	if red == nil {
		red = redact.Default()
	}
	s := oneLine(red.String(output))
	if s == "" {
		return "(no output)"
	}
	return cut(s, SummaryMaxRunes)
}

// oneLine drops control characters and collapses whitespace runs to single
// spaces.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return ' '
		}
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

// cut keeps the first n runes of s, marking a cut with "…".
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return strings.TrimRight(s[:pos], " ") + "…"
		}
		i++
	}
	return s
}

// await runs f and returns its result, or ctx's error as soon as ctx ends,
// whichever comes first: a provider or a remote executor that ignores
// cancellation cannot hold the run past its deadline. A panic in f becomes
// an error rather than taking the process down.
func await[T any](ctx context.Context, f func() (T, error)) (T, error) {
	type result struct {
		v   T
		err error
	}
	ch := make(chan result, 1)
	go func() {
		var res result
		defer func() {
			if p := recover(); p != nil {
				res = result{err: fmt.Errorf("panic: %v", p)}
			}
			ch <- res
		}()
		res.v, res.err = f()
	}()
	select {
	case res := <-ch:
		return res.v, res.err
	case <-ctx.Done():
		select {
		case res := <-ch: // finished at the same moment: keep the real result
			return res.v, res.err
		default:
		}
		var zero T
		return zero, ctx.Err()
	}
}

func ctxWord(ctx context.Context) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return "timeout"
	}
	return "cancelled"
}

func formatTimeout(d time.Duration) string {
	if d%time.Second == 0 {
		if d == time.Second {
			return "1 second"
		}
		return fmt.Sprintf("%d seconds", d/time.Second)
	}
	return d.String()
}

func (r *Runner) redactor() *redact.Redactor {
	if r.Redactor == nil {
		return redact.Default()
	}
	return r.Redactor
}

func (r *Runner) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

func (r *Runner) newID() string {
	if r.NewID == nil {
		return uuid.NewString()
	}
	return r.NewID()
}
