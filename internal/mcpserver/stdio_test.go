package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/llm"
	"github.com/garraia/garra/internal/mcppolicy"
)

// recordingProvider answers every call with a fixed reply and remembers the
// requests, so tests can check what reached the provider (and what did not).
type recordingProvider struct {
	mu    sync.Mutex
	reqs  []llm.Request
	reply string
	err   error
}

func (p *recordingProvider) Kind() llm.Kind { return llm.KindOpenRouter }

func (p *recordingProvider) Complete(_ context.Context, r llm.Request) (*llm.Response, error) {
	p.mu.Lock()
	p.reqs = append(p.reqs, r)
	p.mu.Unlock()
	if p.err != nil {
		return nil, p.err
	}
	return &llm.Response{Text: p.reply}, nil
}

func (p *recordingProvider) calls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.reqs)
}

func connect(t *testing.T, policy mcppolicy.Stdio, prov *recordingProvider) *mcp.ClientSession {
	t.Helper()
	cfg, err := config.Parse([]byte("llm:\n  aliases:\n    local: {provider: ollama}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return dial(t, Options{Version: "test", Caller: mcppolicy.LocalUser(), Ask: recordingCore(cfg, prov), Limits: mcppolicy.Limits{Stdio: policy}}, "t")
}

func TestAskSuccessEnvelope(t *testing.T) {
	prov := &recordingProvider{reply: "forty-two"}
	cs := connect(t, mcppolicy.Stdio{}, prov)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_ask", Arguments: map[string]any{"message": "  what?  "}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError || len(res.Content) != 1 {
		t.Fatalf("unexpected result %+v", res)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	var env map[string]any
	if err := json.Unmarshal([]byte(text), &env); err != nil {
		t.Fatal(err)
	}
	if env["schema"] != "garra.ask.v1" || env["ok"] != true || env["answer"] != "forty-two" ||
		env["provider"] != "openrouter" || env["model"] != "z-ai/glm-5.3-flash" {
		t.Fatalf("envelope = %s", text)
	}
	if _, ok := env["latency_ms"].(float64); !ok || len(env) != 6 {
		t.Fatalf("envelope fields = %s", text)
	}
	if got := prov.reqs[0].Messages[0].Content; got != "what?" {
		t.Fatalf("message not trimmed: %q", got)
	}
}

func TestAskProviderFailureIsToolError(t *testing.T) {
	prov := &recordingProvider{err: &llm.ProviderError{Kind: llm.KindOpenRouter, StatusCode: 401, Message: "bad key sk-or-v1-0123456789abcdef0123456789abcdef0123456789abcdef"}}
	cs := connect(t, mcppolicy.Stdio{}, prov)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_ask", Arguments: map[string]any{"message": "hi"}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if !res.IsError || !strings.Contains(text, `"kind":"provider_error"`) || strings.Contains(text, "0123456789abcdef0123") {
		t.Fatalf("isError=%v text=%s", res.IsError, text)
	}
}

func TestAskTimeoutIsToolError(t *testing.T) {
	prov := &recordingProvider{err: context.DeadlineExceeded}
	cs := connect(t, mcppolicy.Stdio{}, prov)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_ask", Arguments: map[string]any{"message": "hi", "timeout_secs": 1}})
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !res.IsError || !strings.Contains(text, `"kind":"timeout"`) {
		t.Fatalf("isError=%v text=%s", res.IsError, text)
	}
}

func TestAskDefaultTimeoutUnderCap(t *testing.T) {
	prov := &recordingProvider{}
	cfg := config.Default()
	core := &ask.Core{Config: cfg, Getenv: func(string) string { return "k" }, NewProvider: func(llm.Options) (llm.Provider, error) { return prov, nil }}
	d := newServer(Options{Caller: mcppolicy.LocalUser(), Ask: core, Limits: mcppolicy.Limits{Stdio: mcppolicy.Stdio{MaxTimeoutSecs: 7}}})
	req, _, err := d.llmRequest(mcppolicy.ToolAsk, askArgs{Message: ptr("x")})
	if err != nil || req.TimeoutSecs != 7 {
		t.Fatalf("timeout = %d, %v; want 7 (min(60, cap))", req.TimeoutSecs, err)
	}
}

func TestAskInvalidParams(t *testing.T) {
	big := strings.Repeat("a", 64<<10+1)
	tests := []struct {
		name   string
		policy mcppolicy.Stdio
		args   any
		field  string
	}{
		{"unknown field", mcppolicy.Stdio{}, map[string]any{"message": "x", "extra": 1}, "extra"},
		{"missing message", mcppolicy.Stdio{}, map[string]any{}, "message"},
		{"empty message", mcppolicy.Stdio{}, map[string]any{"message": "   "}, "message"},
		{"message too long", mcppolicy.Stdio{}, map[string]any{"message": big}, "message"},
		{"message wrong type", mcppolicy.Stdio{}, map[string]any{"message": 5}, "message"},
		{"timeout wrong type", mcppolicy.Stdio{}, map[string]any{"message": "x", "timeout_secs": "10"}, "timeout_secs"},
		{"timeout fractional", mcppolicy.Stdio{}, map[string]any{"message": "x", "timeout_secs": 1.5}, "timeout_secs"},
		{"timeout zero", mcppolicy.Stdio{}, map[string]any{"message": "x", "timeout_secs": 0}, "timeout_secs"},
		{"timeout above schema", mcppolicy.Stdio{}, map[string]any{"message": "x", "timeout_secs": 601}, "timeout_secs"},
		{"timeout above cap", mcppolicy.Stdio{MaxTimeoutSecs: 10}, map[string]any{"message": "x", "timeout_secs": 11}, "timeout_secs"},
		{"system prompt too long", mcppolicy.Stdio{}, map[string]any{"message": "x", "system_prompt": strings.Repeat("s", 8<<10+1)}, "system_prompt"},
		{"provider not in enum", mcppolicy.Stdio{}, map[string]any{"message": "x", "provider": "gemini"}, "provider"},
		{"provider empty", mcppolicy.Stdio{}, map[string]any{"message": "x", "provider": ""}, "provider"},
		{"model outside allowlist", mcppolicy.Stdio{ModelAllowlist: []string{"a"}}, map[string]any{"message": "x", "model": "openrouter/auto"}, "model"},
		{"default model outside allowlist", mcppolicy.Stdio{ModelAllowlist: []string{"a"}}, map[string]any{"message": "x"}, "model"},
		{"arguments not an object", mcppolicy.Stdio{}, []any{1}, "arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prov := &recordingProvider{reply: "no"}
			cs := connect(t, tt.policy, prov)
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_ask", Arguments: tt.args})
			var werr *jsonrpc.Error
			if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("err = %v, want JSON-RPC -32602", err)
			}
			if !strings.HasPrefix(werr.Message, tt.field) {
				t.Fatalf("message %q does not name field %q", werr.Message, tt.field)
			}
			if prov.calls() != 0 {
				t.Fatal("a rejected call reached the provider")
			}
		})
	}
}

func TestAskAcceptsAliasAndAllowedModel(t *testing.T) {
	prov := &recordingProvider{reply: "ok"}
	cs := connect(t, mcppolicy.Stdio{ModelAllowlist: []string{"llama3"}}, prov)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_ask", Arguments: map[string]any{"message": "x", "provider": "local", "model": "llama3"}})
	if err != nil || res.IsError {
		t.Fatalf("res=%+v err=%v", res, err)
	}
	if !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"provider":"local"`) {
		t.Fatal("alias not reported as the provider")
	}
}

func TestToolsListExactSchema(t *testing.T) {
	cs := connect(t, mcppolicy.Stdio{}, &recordingProvider{})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "garra_ask" {
		t.Fatalf("tools = %+v", res.Tools)
	}
	got, _ := json.Marshal(res.Tools[0].InputSchema)
	var want, have any
	_ = json.Unmarshal(askSchema(newServer(Options{Caller: mcppolicy.LocalUser()})), &want)
	_ = json.Unmarshal(got, &have)
	wb, _ := json.Marshal(want)
	hb, _ := json.Marshal(have)
	if string(wb) != string(hb) {
		t.Fatalf("schema drift:\n got %s\nwant %s", hb, wb)
	}
}
