package gateway_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/gateway"
	"github.com/garraia/garra/test/fakes/llmdouble"
)

const twoAgents = `
    orchestrators:
      - name: alpha
        key_env: ALPHA_KEY
        tools: [status, agent]
      - name: beta
        key_env: BETA_KEY
        tools: [status, agent]
`

func TestAgentWorkspacesAreIsolated(t *testing.T) {
	double := llmdouble.New(t,
		// alpha writes a file in its workspace
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "file_write", Args: `{"path":"report.txt","content":"alpha's secret plan"}`}}},
		llmdouble.Step{Text: "written"},
		// beta tries to read the same relative path, then alpha's absolute one
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "file_read", Args: `{"path":"report.txt"}`}}},
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "file_read", Args: `{"path":"../` + filepath.Base(gateway.WorkspaceDir("/x", "alpha")) + `/report.txt"}`}}},
		llmdouble.Step{Text: "nothing there"},
	)
	yaml := enabled + "    allow_agent: true\n    agent_max_seconds: 60\n" + twoAgents +
		"llm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
	env := map[string]string{"ALPHA_KEY": "alpha-token-1234567", "BETA_KEY": "beta-token-12345678", "OPENROUTER_API_KEY": "k"}
	h := start(t, yaml, env)

	res, isErr := call(t, client(t, h.url, "alpha-token-1234567"), "garra_agent", map[string]any{"message": "write the report"})
	if isErr || res["ok"] != true || !strings.HasPrefix(res["session_id"].(string), "mcp-http-alpha-") {
		t.Fatalf("alpha: %v", res)
	}
	alphaDir := gateway.WorkspaceDir(h.cfg.DataDirPath(), "alpha")
	if b, err := os.ReadFile(filepath.Join(alphaDir, "report.txt")); err != nil || string(b) != "alpha's secret plan" {
		t.Fatalf("alpha's file: %q %v", b, err)
	}

	res, _ = call(t, client(t, h.url, "beta-token-12345678"), "garra_agent", map[string]any{"message": "read the report", "timeout_secs": 30})
	calls := res["tool_calls"].([]any)
	if res["ok"] != true || len(calls) != 2 {
		t.Fatalf("beta: %v", res)
	}
	for _, c := range calls {
		if c.(map[string]any)["success"] != false {
			t.Fatalf("beta read alpha's file: %v", c)
		}
	}
	for _, r := range double.Requests()[2:] {
		if strings.Contains(string(r.RawBody), "secret plan") {
			t.Fatal("alpha's content reached beta's model")
		}
		if strings.Contains(string(r.RawBody), h.cfg.DataDirPath()) {
			t.Fatal("a tool message leaked the host path of the workspace")
		}
	}
}

func TestAgentPolicyOrder(t *testing.T) {
	double := llmdouble.New(t)
	yaml := enabled + "    allow_agent: true\n    agent_budget_per_minute: 1\n    agent_max_seconds: 60\n" + twoAgents +
		"llm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
	h := start(t, yaml, map[string]string{"ALPHA_KEY": "alpha-token-1234567", "OPENROUTER_API_KEY": "k"})
	cs := client(t, h.url, "alpha-token-1234567")

	// A ceiling above agent_max_seconds is invalid_params, not a silent cut.
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_agent", Arguments: map[string]any{"message": "x", "timeout_secs": 61}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.HasPrefix(werr.Message, "timeout_secs") {
		t.Fatalf("timeout above the ceiling: %v", err)
	}
	// A refused model costs no budget.
	res, _ := call(t, cs, "garra_agent", map[string]any{"message": "x", "model": "openrouter/auto"})
	if kindOf(res) != "model_not_allowed" || res["schema"] != "garra.agent.v1" {
		t.Fatalf("model: %v", res)
	}
	res, _ = call(t, cs, "garra_agent", map[string]any{"message": "hello"})
	if res["ok"] != true {
		t.Fatalf("first run: %v", res)
	}
	res, _ = call(t, cs, "garra_agent", map[string]any{"message": "again"})
	if kindOf(res) != "over_budget" {
		t.Fatalf("second run: %v", res)
	}
	if n := len(double.Requests()); n != 1 {
		t.Fatalf("refused calls reached the provider: %d requests", n)
	}
}

func TestAgentWorkspaceSymlinkFailsClosed(t *testing.T) {
	double := llmdouble.New(t, llmdouble.Step{Text: "unused"})
	yaml := enabled + "    allow_agent: true\n    agent_max_seconds: 60\n" + twoAgents +
		"llm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
	h := start(t, yaml, map[string]string{"ALPHA_KEY": "alpha-token-1234567", "OPENROUTER_API_KEY": "k"})
	dir := gateway.WorkspaceDir(h.cfg.DataDirPath(), "alpha")
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), dir); err != nil {
		t.Fatal(err)
	}
	res, isErr := call(t, client(t, h.url, "alpha-token-1234567"), "garra_agent", map[string]any{"message": "x"})
	if !isErr || res["ok"] != false || strings.Contains(res["error"].(map[string]any)["message"].(string), h.cfg.DataDirPath()) {
		t.Fatalf("symlinked workspace: %v", res)
	}
}
