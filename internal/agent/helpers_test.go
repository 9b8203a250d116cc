package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/garraia/garra/internal/llm"
	"github.com/garraia/garra/internal/tools"
	"github.com/garraia/garra/test/fakes/llmdouble"
)

// family is one wire format the real clients speak to the double.
type family struct {
	name string
	kind llm.Kind
	base func(*llmdouble.Server) string
}

var families = []family{
	{"openai", llm.KindOpenAI, (*llmdouble.Server).OpenAIBaseURL},
	{"anthropic", llm.KindAnthropic, (*llmdouble.Server).AnthropicBaseURL},
}

func newProvider(t *testing.T, f family, s *llmdouble.Server) llm.Provider {
	t.Helper()
	p, err := llm.New(llm.Options{Kind: f.kind, BaseURL: f.base(s), APIKey: "test-key", MaxRetries: 0})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// testCtx bounds a test so a broken loop fails instead of hanging.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// clock is a fake time source that only moves when told to.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// execCall is one call a fakeExec received.
type execCall struct {
	Name string
	Args string // compacted JSON
}

// fakeExec is an in-memory tools.Executor that records every call and
// answers with handle.
type fakeExec struct {
	tools  []tools.Tool
	handle func(ctx context.Context, name string, args json.RawMessage) (tools.Result, error)

	mu    sync.Mutex
	calls []execCall
}

func newExec(handle func(ctx context.Context, name string, args json.RawMessage) (tools.Result, error), names ...string) *fakeExec {
	e := &fakeExec{handle: handle}
	for _, n := range names {
		e.tools = append(e.tools, tools.Tool{
			Name:        n,
			Description: "The " + n + " tool.",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"additionalProperties":false}`),
		})
	}
	return e
}

func (e *fakeExec) Tools(context.Context) ([]tools.Tool, error) { return e.tools, nil }

func (e *fakeExec) Call(ctx context.Context, name string, args json.RawMessage) (tools.Result, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, args); err != nil {
		buf.Reset()
		buf.Write(args)
	}
	e.mu.Lock()
	e.calls = append(e.calls, execCall{name, buf.String()})
	e.mu.Unlock()
	return e.handle(ctx, name, args)
}

func (e *fakeExec) Calls() []execCall {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]execCall(nil), e.calls...)
}

// scriptProvider is an in-process llm.Provider for tests that do not need
// the wire: it answers with reply, counting turns.
type scriptProvider struct {
	mu    sync.Mutex
	reqs  []llm.Request
	reply func(ctx context.Context, turn int, req llm.Request) (*llm.Response, error)
}

func (p *scriptProvider) Kind() llm.Kind { return llm.KindOpenAI }

func (p *scriptProvider) Complete(ctx context.Context, req llm.Request) (*llm.Response, error) {
	p.mu.Lock()
	p.reqs = append(p.reqs, req)
	turn := len(p.reqs)
	p.mu.Unlock()
	return p.reply(ctx, turn, req)
}

func (p *scriptProvider) Requests() []llm.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]llm.Request(nil), p.reqs...)
}

// wireCall is an assistant tool call as replayed in a request's history.
type wireCall struct{ ID, Name string }

// wireResult is a tool result as it travelled in a request's history. On
// the OpenAI wire, which has no error flag, IsError is read from the
// "Error: " prefix the client adds.
type wireResult struct {
	ID      string
	Content string
	IsError bool
}

// wireHistory reads the tool calls and tool results out of a recorded
// request, whatever its wire family.
func wireHistory(t *testing.T, rec llmdouble.Recorded) (calls []wireCall, results []wireResult) {
	t.Helper()
	msgs, _ := rec.Body["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		role, _ := mm["role"].(string)
		switch rec.Protocol {
		case llmdouble.ProtocolOpenAI:
			switch role {
			case "assistant":
				tcs, _ := mm["tool_calls"].([]any)
				for _, tc := range tcs {
					tcm, _ := tc.(map[string]any)
					fn, _ := tcm["function"].(map[string]any)
					calls = append(calls, wireCall{str(tcm["id"]), str(fn["name"])})
				}
			case "tool":
				content := textOf(mm["content"])
				isErr := strings.HasPrefix(content, "Error: ")
				results = append(results, wireResult{str(mm["tool_call_id"]), strings.TrimPrefix(content, "Error: "), isErr})
			}
		case llmdouble.ProtocolAnthropic:
			blocks, _ := mm["content"].([]any)
			for _, b := range blocks {
				bm, _ := b.(map[string]any)
				switch bm["type"] {
				case "tool_use":
					calls = append(calls, wireCall{str(bm["id"]), str(bm["name"])})
				case "tool_result":
					isErr, _ := bm["is_error"].(bool)
					results = append(results, wireResult{str(bm["tool_use_id"]), textOf(bm["content"]), isErr})
				}
			}
		default:
			t.Fatalf("unexpected protocol %q", rec.Protocol)
		}
	}
	return calls, results
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func textOf(v any) string {
	switch c := v.(type) {
	case string:
		return c
	case []any:
		var parts []string
		for _, p := range c {
			pm, _ := p.(map[string]any)
			if pm["type"] == "text" {
				parts = append(parts, str(pm["text"]))
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}
