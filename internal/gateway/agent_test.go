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
	"github.com/garraia/garra/internal/hands"
	"github.com/garraia/garra/internal/jail"
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
	env := map[string]string{"ALPHA_KEY": "alpha-token-1234567", "BETA_KEY": "beta-token-12345678", "OPENROUTER_API_KEY": "llm-test-key-0123"}
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
	h := start(t, yaml, map[string]string{"ALPHA_KEY": "alpha-token-1234567", "OPENROUTER_API_KEY": "llm-test-key-0123"})
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

// A workspace that is not materialized — replaced by a symlink, or gone
// after boot — fails closed the way the spec says: the run goes on, every
// file tool denies every path, and bash is refused; nothing is created or
// followed.
func TestAgentWorkspaceNotMaterializedFailsClosed(t *testing.T) {
	for _, tt := range []struct {
		name    string
		breakIt func(t *testing.T, dir, elsewhere string)
	}{
		{"symlink", func(t *testing.T, dir, elsewhere string) {
			must(t, os.Remove(dir))
			must(t, os.Symlink(elsewhere, dir))
		}},
		{"missing", func(t *testing.T, dir, _ string) { must(t, os.Remove(dir)) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			double := llmdouble.New(t,
				llmdouble.Step{ToolCalls: []llmdouble.Call{
					{Name: "file_read", Args: `{"path":"secret.txt"}`},
					{Name: "file_write", Args: `{"path":"planted.txt","content":"x"}`},
					{Name: "bash", Args: `{"command":"echo hi > planted-by-bash.txt"}`},
				}},
				llmdouble.Step{Text: "could not touch anything"},
			)
			yaml := enabled + "    allow_agent: true\n    agent_max_seconds: 60\n" + twoAgents +
				"execution: {profile: isolated-pod}\nllm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
			h := start(t, yaml, map[string]string{"ALPHA_KEY": "alpha-token-1234567", "OPENROUTER_API_KEY": "llm-test-key-0123"})
			dir := gateway.WorkspaceDir(h.cfg.DataDirPath(), "alpha")
			if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Fatalf("the workspace was not materialized at boot: %v %v", fi, err)
			}
			elsewhere := t.TempDir()
			must(t, os.WriteFile(filepath.Join(elsewhere, "secret.txt"), []byte("not yours"), 0o600))
			tt.breakIt(t, dir, elsewhere)

			res, isErr := call(t, client(t, h.url, "alpha-token-1234567"), "garra_agent", map[string]any{"message": "x"})
			calls, _ := res["tool_calls"].([]any)
			if isErr || res["ok"] != true || len(calls) != 3 {
				t.Fatalf("the run must go on with refusing tools, not fail: %v", res)
			}
			for _, c := range calls {
				if c.(map[string]any)["success"] != false {
					t.Errorf("a tool succeeded without a workspace: %v", c)
				}
			}
			reqs := double.Requests()
			if len(reqs) != 2 || !strings.Contains(strings.Join(reqs[0].ToolNames, " "), "bash") {
				t.Fatalf("requests %d, tools %v", len(reqs), reqs[0].ToolNames)
			}
			body := string(reqs[1].RawBody)
			if strings.Count(body, jail.ErrDenied.Error()) != 2 || !strings.Contains(body, hands.ErrNoWorkspace.Error()) {
				t.Fatalf("tool results are not the spec's refusals:\n%s", body)
			}
			if strings.Contains(body, "not yours") || strings.Contains(body, h.cfg.DataDirPath()) {
				t.Fatal("a refusal leaked content or the host path")
			}
			for _, p := range []string{"planted.txt", "planted-by-bash.txt"} {
				if _, err := os.Lstat(filepath.Join(elsewhere, p)); err == nil {
					t.Errorf("%s written through the symlink", p)
				}
			}
			if tt.name == "missing" {
				if _, err := os.Lstat(dir); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("a call recreated the workspace: %v", err)
				}
			}
			if !strings.Contains(h.logs.String(), "agent workspace not materialized") {
				t.Fatalf("no warning in the log:\n%s", h.logs.String())
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// agent.file_write_backup keeps the replaced file as <path>.bak in the
// orchestrator's workspace.
func TestAgentFileWriteBackup(t *testing.T) {
	double := llmdouble.New(t,
		llmdouble.Step{ToolCalls: []llmdouble.Call{
			{Name: "file_write", Args: `{"path":"plan.md","content":"v1"}`},
			{Name: "file_write", Args: `{"path":"plan.md","content":"v2"}`},
		}},
		llmdouble.Step{Text: "rewrote it"})
	yaml := enabled + "    allow_agent: true\n    agent_max_seconds: 60\n" + twoAgents +
		"agent: {file_write_backup: true}\nllm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
	h := start(t, yaml, map[string]string{"ALPHA_KEY": "alpha-token-1234567", "OPENROUTER_API_KEY": "llm-test-key-0123"})
	if res, _ := call(t, client(t, h.url, "alpha-token-1234567"), "garra_agent", map[string]any{"message": "x"}); res["ok"] != true {
		t.Fatalf("run: %v", res)
	}
	dir := gateway.WorkspaceDir(h.cfg.DataDirPath(), "alpha")
	cur, err1 := os.ReadFile(filepath.Join(dir, "plan.md"))
	bak, err2 := os.ReadFile(filepath.Join(dir, "plan.md.bak"))
	if err1 != nil || err2 != nil || string(cur) != "v2" || string(bak) != "v1" {
		t.Fatalf("plan.md %q (%v), plan.md.bak %q (%v)", cur, err1, bak, err2)
	}
}
