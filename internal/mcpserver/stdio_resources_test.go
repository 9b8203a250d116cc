package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/agent"
	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/mcppolicy"
)

// fakeAgent answers every garra_agent call with a fixed envelope.
type fakeAgent struct{ answer string }

func (f fakeAgent) RunAgent(_ context.Context, c agent.Call) (agent.Envelope, error) {
	return agent.Envelope{OK: true, Answer: f.answer, Provider: c.Provider, Model: c.Model, ToolCalls: []agent.ToolCallSummary{}}, nil
}

// connectWith connects a client (named clientName) to a server built from o,
// with the recording provider as the asker's backend.
func connectWith(t *testing.T, o Options, prov *recordingProvider, clientName string) *mcp.ClientSession {
	t.Helper()
	o.Caller, o.Version, o.Ask = mcppolicy.LocalUser(), "test", recordingCore(config.Default(), prov)
	return dial(t, o, clientName)
}

func readPolicy(t *testing.T, cs *mcp.ClientSession) map[string]any {
	t.Helper()
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "garra://policy"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Contents) != 1 || res.Contents[0].MIMEType != "application/json" {
		t.Fatalf("contents %+v", res.Contents)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestStdioResources(t *testing.T) {
	cs := connectWith(t, Options{}, &recordingProvider{}, "t")
	res, err := cs.ListResources(context.Background(), nil)
	if err != nil || len(res.Resources) != 1 || res.Resources[0].URI != "garra://policy" {
		t.Fatalf("resources %+v %v", res, err)
	}
	tpl, err := cs.ListResourceTemplates(context.Background(), nil)
	if err != nil || len(tpl.ResourceTemplates) != 0 {
		t.Fatalf("templates %+v %v", tpl, err)
	}
	if got := jsonOf(t, readPolicy(t, cs)); got != `{"max_timeout_secs":0,"model_allowlist":[],"schema":"garra.policy.v1","surface":"stdio","timeout_caps":{"garra_ask":600},"tools":["garra_ask"],"tools_enabled":false}` {
		t.Fatalf("default policy %s", got)
	}

	// The knobs in force, with the agent: a count of file roots, no paths.
	cs = connectWith(t, Options{Limits: mcppolicy.Limits{Stdio: mcppolicy.Stdio{ModelAllowlist: []string{"z-ai/glm-5.3-flash"}, MaxTimeoutSecs: 120, EnableTools: true}},
		Agent: fakeAgent{}, FileRoots: 2}, &recordingProvider{}, "t")
	if got := jsonOf(t, readPolicy(t, cs)); got != `{"allowed_dirs":2,"max_timeout_secs":120,"model_allowlist":["z-ai/glm-5.3-flash"],"schema":"garra.policy.v1","surface":"stdio","timeout_caps":{"garra_agent":120,"garra_ask":120},"tools":["garra_ask","garra_agent"],"tools_enabled":true}` {
		t.Fatalf("policy %s", got)
	}

	// Anything else is the SDK's "Resource not found".
	for _, uri := range []string{"garra://status", "garra://chats", "file:///etc/passwd"} {
		_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || werr.Message != "Resource not found" {
			t.Fatalf("%s: %v", uri, err)
		}
	}
}

func promptList(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range res.Prompts {
		names = append(names, p.Name)
	}
	return strings.Join(names, " ")
}

func TestStdioPrompts(t *testing.T) {
	plain := connectWith(t, Options{}, &recordingProvider{}, "t")
	if got := promptList(t, plain); got != "onboard_orchestrator" {
		t.Fatalf("prompts without the agent: %q", got)
	}
	_, err := plain.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "delegate_task", Arguments: map[string]string{"goal": "x"}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.Contains(werr.Message, "unknown prompt") {
		t.Fatalf("delegate_task without the agent: %v", err)
	}
	res, err := plain.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "onboard_orchestrator", Arguments: map[string]string{"name": "n8n", "tools": "status,ask"}})
	if err != nil || !strings.Contains(res.Messages[0].Content.(*mcp.TextContent).Text, `"url": "http://127.0.0.1:3888/mcp"`) {
		t.Fatalf("onboard: %v %+v", err, res)
	}
	_, err = plain.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "onboard_orchestrator", Arguments: map[string]string{"name": "N8N!"}})
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.HasPrefix(werr.Message, "name: ") {
		t.Fatalf("bad name: %v", err)
	}

	// With the agent, delegate_task is bounded by the operator's cap.
	cs := connectWith(t, Options{Limits: mcppolicy.Limits{Stdio: mcppolicy.Stdio{EnableTools: true, MaxTimeoutSecs: 90}}, Agent: fakeAgent{}}, &recordingProvider{}, "t")
	if got := promptList(t, cs); got != "delegate_task onboard_orchestrator" {
		t.Fatalf("prompts with the agent: %q", got)
	}
	res, err = cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "delegate_task", Arguments: map[string]string{"goal": "Count the Go files."}})
	if err != nil || !strings.Contains(res.Messages[0].Content.(*mcp.TextContent).Text, `"timeout_secs": 90`) {
		t.Fatalf("delegate default timeout: %v %+v", err, res)
	}
	_, err = cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "delegate_task", Arguments: map[string]string{"goal": "x", "timeout": "91"}})
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.HasPrefix(werr.Message, "timeout: ") {
		t.Fatalf("timeout over the cap: %v", err)
	}
}

func TestStdioAuditFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "audit.jsonl")
	log := audit.New(audit.Options{Path: path})
	t.Cleanup(func() { _ = log.Close() })
	prov := &recordingProvider{reply: "the answer is MAGENTA-42"}
	cs := connectWith(t, Options{Audit: log, Limits: mcppolicy.Limits{Stdio: mcppolicy.Stdio{ModelAllowlist: []string{"z-ai/glm-5.3-flash"}}}}, prov, "claude-code")
	ctx := context.Background()

	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "garra_ask", Arguments: map[string]any{"message": "what is my secret PLUM-77?"}}); err != nil {
		t.Fatal(err)
	}
	_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "garra_ask", Arguments: map[string]any{"message": "x", "model": "openrouter/auto"}})
	_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "garra_agent", Arguments: map[string]any{"message": "rm -rf TANGERINE"}})
	_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "steal_KIWI", Arguments: map[string]any{}})
	readPolicy(t, cs)
	_, _ = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "garra://chats/LIME-9"})

	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"PLUM-77", "MAGENTA-42", "TANGERINE", "KIWI", "LIME-9", "test-key", "openrouter/auto"} {
		if strings.Contains(string(raw), secret) {
			t.Errorf("audit file holds %q:\n%s", secret, raw)
		}
	}
	want := []string{
		`"surface":"stdio","caller":"claude-code","tool":"garra_ask","outcome":"ok","provider":"openrouter","model":"z-ai/glm-5.3-flash"`,
		`"surface":"stdio","caller":"claude-code","tool":"garra_ask","outcome":"invalid_params","error":{"kind":"usage"}`,
		`"surface":"stdio","caller":"claude-code","tool":"garra_agent","outcome":"not_found","error":{"kind":"not_found"}`,
		`"surface":"stdio","caller":"claude-code","tool":"unknown","target":"` + log.Pseudonym("steal_KIWI") + `","outcome":"not_found"`,
		`"surface":"stdio","caller":"claude-code","resource":"garra://policy","outcome":"ok"`,
		`"surface":"stdio","caller":"claude-code","resource":"unknown","target":"` + log.Pseudonym("garra://chats/LIME-9") + `","outcome":"not_found"`,
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), raw)
	}
	for i, w := range want {
		if !strings.Contains(lines[i], w) {
			t.Errorf("line %d:\n %s\nwant it to contain\n %s", i, lines[i], w)
		}
	}
}

func TestClientNameIsBounded(t *testing.T) {
	if got := clientName(nil); got != "local" {
		t.Fatalf("nil request: %q", got)
	}
	var r *mcp.CallToolRequest
	if got := clientName(r); got != "local" {
		t.Fatalf("nil typed request: %q", got)
	}
}
