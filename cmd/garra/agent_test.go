package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/test/fakes/llmdouble"
	"github.com/garraia/garra/test/mcphttp"
)

// gitRepo makes a temp git repository with one committed file.
func gitRepo(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"init", "-q"}, {"config", "user.email", "t@example.invalid"}, {"config", "user.name", "t"},
	} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "."}, {"commit", "-qm", "init"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return dir
}

// agentEnvelope is garra.agent.v1 as the tests read it.
type agentEnvelope = mcphttp.AgentEnvelope

func callAgent(t *testing.T, cs *mcp.ClientSession, args map[string]any) (agentEnvelope, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_agent", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	var env agentEnvelope
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &env); err != nil {
		t.Fatal(err)
	}
	return env, res.IsError
}

var sessionRE = regexp.MustCompile(`^mcp-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

func agentServer(t *testing.T, double *llmdouble.Server, repo string, extra ...string) (*mcp.ClientSession, *lockedBuffer, *lockedBuffer) {
	cfg := writeConfig(t, "openrouter", double.OpenAIBaseURL())
	env := testEnv(t, append([]string{"OPENROUTER_API_KEY=" + fakeKey, "GARRAIA_MCP_ENABLE_TOOLS=yes", "GARRAIA_MCP_ALLOWED_DIRS=" + repo}, extra...)...)
	return startServer(t, env, "--config", cfg)
}

func TestAgentReadsWritesAndDiffsInARepo(t *testing.T) {
	repo := gitRepo(t)
	double := llmdouble.New(t,
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "file_read", Args: `{"path":"notes.txt"}`}}},
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "file_write", Args: `{"path":"notes.txt","content":"alpha\nbeta\n"}`}}},
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "git_diff", Args: `{}`}}},
		llmdouble.Step{Text: "Added beta to notes.txt."},
	)
	cs, stdout, stderr := agentServer(t, double, repo)

	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 2 || tools.Tools[0].Name != "garra_agent" || tools.Tools[1].Name != "garra_ask" {
		t.Fatalf("tools/list with opt-in: %+v %v", tools, err)
	}

	env, isErr := callAgent(t, cs, map[string]any{"message": "Append beta to notes.txt and show the diff.", "working_dir": repo})
	if isErr || env.Schema != "garra.agent.v1" || !env.OK || env.Answer != "Added beta to notes.txt." ||
		env.Provider != "openrouter" || env.Model != "z-ai/glm-5.3-flash" || env.LatencyMS == nil || env.Error != nil {
		t.Fatalf("envelope %+v", env)
	}
	if !sessionRE.MatchString(env.SessionID) {
		t.Fatalf("session_id %q", env.SessionID)
	}
	names := []string{}
	for _, c := range env.ToolCalls {
		if !c.Success || c.DurationMS == nil || c.Summary == "" {
			t.Fatalf("tool call %+v", c)
		}
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "file_read,file_write,git_diff" {
		t.Fatalf("tool calls %v", names)
	}
	got, _ := os.ReadFile(filepath.Join(repo, "notes.txt"))
	if string(got) != "alpha\nbeta\n" {
		t.Fatalf("file = %q", got)
	}
	// The diff the model saw came from git, in the repo.
	reqs := double.Requests()
	if len(reqs) != 4 || !strings.Contains(string(reqs[3].RawBody), `+beta`) {
		t.Fatalf("the model never saw the diff: %d requests", len(reqs))
	}
	// The default system prompt names the registered tools and says there is no shell.
	if sys := reqs[0].System + string(reqs[0].RawBody); !strings.Contains(sys, "file_write") || !strings.Contains(sys, "no shell") {
		t.Fatalf("system prompt: %s", reqs[0].System)
	}
	if !strings.Contains(stderr.String(), "bash is not registered") {
		t.Fatalf("no boot warning about bash:\n%s", stderr.String())
	}
	_ = cs.Close()
	time.Sleep(20 * time.Millisecond)
	assertJSONRPCOnly(t, stdout.String())
}

func TestAgentToolFailureIsReported(t *testing.T) {
	repo := gitRepo(t)
	double := llmdouble.New(t,
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "file_read", Args: `{"path":"/etc/passwd"}`}}},
		llmdouble.Step{Text: "I could not read it."},
	)
	cs, _, _ := agentServer(t, double, repo)
	env, isErr := callAgent(t, cs, map[string]any{"message": "read /etc/passwd"})
	if isErr || !env.OK || len(env.ToolCalls) != 1 || env.ToolCalls[0].Success || env.ToolCalls[0].Name != "file_read" {
		t.Fatalf("envelope %+v", env)
	}
	if strings.Contains(env.ToolCalls[0].Summary, "root:") {
		t.Fatalf("denied file leaked: %q", env.ToolCalls[0].Summary)
	}
}

func TestAgentTimesOutMidTool(t *testing.T) {
	repo := gitRepo(t)
	double := llmdouble.New(t,
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "bash", Args: `{"command":"sleep 30"}`}}},
		llmdouble.Step{Text: "never reached"},
	)
	// isolated-pod registers bash on the host (the spec's #1272 table).
	cs, _, _ := agentServer(t, double, repo, "GARRAIA_EXECUTION_PROFILE=isolated-pod")
	start := time.Now()
	env, isErr := callAgent(t, cs, map[string]any{"message": "wait", "timeout_secs": 5, "working_dir": repo})
	if !isErr || env.OK || env.Error == nil || env.Error.Kind != "timeout" {
		t.Fatalf("envelope %+v", env)
	}
	if len(env.ToolCalls) != 1 || env.ToolCalls[0].Name != "bash" || env.ToolCalls[0].Success {
		t.Fatalf("tool_calls %+v", env.ToolCalls)
	}
	if d := time.Since(start); d > 9*time.Second {
		t.Fatalf("timeout took %v", d)
	}
}

func TestAgentInvalidParams(t *testing.T) {
	repo := gitRepo(t)
	outside := t.TempDir()
	double := llmdouble.New(t)
	cs, _, _ := agentServer(t, double, repo, "GARRAIA_MCP_MAX_TIMEOUT_SECS=100")
	tests := []struct {
		args  map[string]any
		field string
	}{
		{map[string]any{"message": "x", "working_dir": outside}, "working_dir"},
		{map[string]any{"message": "x", "working_dir": filepath.Join(repo, "missing")}, "working_dir"},
		{map[string]any{"message": "x", "working_dir": filepath.Join(repo, "notes.txt")}, "working_dir"},
		{map[string]any{"message": "x", "timeout_secs": 4}, "timeout_secs"},
		{map[string]any{"message": "x", "timeout_secs": 1801}, "timeout_secs"},
		{map[string]any{"message": "x", "timeout_secs": 101}, "timeout_secs"},
		{map[string]any{"message": "x", "shell": true}, "shell"},
		{map[string]any{"message": ""}, "message"},
	}
	for _, tt := range tests {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_agent", Arguments: tt.args})
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.HasPrefix(werr.Message, tt.field) {
			t.Errorf("%v: err = %v, want -32602 naming %s", tt.args, err, tt.field)
		}
		if werr != nil && strings.Contains(werr.Message, outside) {
			t.Errorf("refusal echoes the path: %s", werr.Message)
		}
	}
	if len(double.Requests()) != 0 {
		t.Fatal("a rejected call reached the provider")
	}
}

// Without the opt-in, tools/list is byte-identical to the garra_ask-only server.
func TestAgentOptInLeavesSurfaceUnchanged(t *testing.T) {
	double := llmdouble.New(t)
	cfg := writeConfig(t, "openrouter", double.OpenAIBaseURL())
	list := func(extra ...string) string {
		cs, _, _ := startServer(t, testEnv(t, extra...), "--config", cfg)
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(res)
		return string(b)
	}
	base := list()
	for _, v := range []string{"0", "false", "no", "off", ""} {
		if got := list("GARRAIA_MCP_ENABLE_TOOLS=" + v); got != base {
			t.Fatalf("GARRAIA_MCP_ENABLE_TOOLS=%q changed tools/list:\n%s\n%s", v, got, base)
		}
	}
	if got := list("GARRAIA_MCP_ENABLE_TOOLS=TRUE"); got == base || !strings.Contains(got, "garra_agent") {
		t.Fatal("TRUE did not enable garra_agent")
	}
}
