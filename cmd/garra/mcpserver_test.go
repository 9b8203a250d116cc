package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/test/fakes/llmdouble"
	"github.com/garraia/garra/test/testlog"
)

const fakeKey = "sk-or-v1-00000000000000000000000000000000000000000000000000000000deadbeef"

type lockedBuffer = testlog.Buffer

type teeReadCloser struct {
	io.Reader
	io.Closer
}

// startServer runs `garra mcp-server` as a child over pipes and connects the
// go-sdk client to it. Every byte the child writes to stdout is kept.
func startServer(t *testing.T, env []string, args ...string) (*mcp.ClientSession, *lockedBuffer, *lockedBuffer) {
	t.Helper()
	return startServerWith(t, nil, env, args...)
}

// startServerWith is startServer with the client's options.
func startServerWith(t *testing.T, opts *mcp.ClientOptions, env []string, args ...string) (*mcp.ClientSession, *lockedBuffer, *lockedBuffer) {
	t.Helper()
	w := startServerAt(t, opts, "", env, args...)
	return w.cs, w.stdout, w.stderr
}

// wire is a client session with everything that crossed the child's pipes.
type wire struct {
	cs                    *mcp.ClientSession
	stdin, stdout, stderr *lockedBuffer
}

type teeWriteCloser struct {
	io.Writer
	io.Closer
}

// startServerAt is startServerWith with the client asking for protocol
// version (empty: the client's newest), keeping stdin too.
func startServerAt(t *testing.T, opts *mcp.ClientOptions, version string, env []string, args ...string) wire {
	t.Helper()
	cmd := exec.Command(garraBin, append([]string{"mcp-server"}, args...)...)
	cmd.Env = env
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	rawOut, rawIn := &lockedBuffer{}, &lockedBuffer{}
	transport := &mcp.IOTransport{Reader: teeReadCloser{io.TeeReader(stdout, rawOut), stdout},
		Writer: teeWriteCloser{io.MultiWriter(stdin, rawIn), stdin}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "child-test", Version: "0"}, opts).Connect(ctx, transport,
		&mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v\nstderr: %s", err, stderr.String())
	}
	t.Cleanup(func() {
		_ = cs.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			t.Error("mcp-server did not exit after stdin closed")
		}
	})
	return wire{cs: cs, stdin: rawIn, stdout: rawOut, stderr: stderr}
}

// assertJSONRPCOnly fails unless every stdout line is one JSON-RPC 2.0 message.
func assertJSONRPCOnly(t *testing.T, stdout string) {
	t.Helper()
	if stdout == "" {
		t.Fatal("no stdout at all")
	}
	sc := bufio.NewScanner(strings.NewReader(stdout))
	sc.Buffer(make([]byte, 0, 1<<20), 32<<20)
	for sc.Scan() {
		var msg struct {
			JSONRPC string `json:"jsonrpc"`
		}
		if err := json.Unmarshal(sc.Bytes(), &msg); err != nil || msg.JSONRPC != "2.0" {
			t.Fatalf("non-JSON-RPC line on stdout: %q", sc.Text())
		}
	}
	if !strings.HasSuffix(stdout, "\n") {
		t.Fatalf("stdout ends mid-line: %q", stdout[max(0, len(stdout)-80):])
	}
}

func TestStdioServerEndToEnd(t *testing.T) {
	double := llmdouble.New(t, llmdouble.Step{Text: "Paris"})
	cfg := writeConfig(t, "openrouter", double.URL()+"/v1")
	env := testEnv(t, "OPENROUTER_API_KEY="+fakeKey, "GARRAIA_MCP_MODEL_ALLOWLIST=z-ai/glm-5.3-flash,other/model", "GARRAIA_MCP_MAX_TIMEOUT_SECS=120")
	cs, stdout, stderr := startServer(t, env, "--config", cfg)
	ctx := context.Background()

	init := cs.InitializeResult()
	if init.ServerInfo.Name != "garra" || init.Capabilities.Tools == nil {
		t.Fatalf("initialize = %+v", init)
	}

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "garra_ask" {
		t.Fatalf("tools/list = %+v", tools.Tools)
	}
	gotSchema, _ := json.Marshal(tools.Tools[0].InputSchema)
	const wantSchema = `{"additionalProperties":false,"properties":{"message":{"description":"The question or task for the model. Max 64 KiB; trimmed; must not be empty.","maxLength":65536,"type":"string"},"model":{"default":"z-ai/glm-5.3-flash","description":"Model id. The default is a low-cost model; pass a pricier one such as openrouter/auto explicitly for complex tasks.","type":"string"},"provider":{"default":"openrouter","description":"LLM provider. Provider aliases from the server's config are accepted too.","enum":["ollama","anthropic","openai","openrouter"],"type":"string"},"system_prompt":{"description":"Optional system prompt (max 8 KiB). A minimal default is used when absent.","maxLength":8192,"type":"string"},"timeout_secs":{"default":60,"description":"Wall-clock limit for the provider call, in seconds.","maximum":600,"minimum":1,"type":"integer"}},"required":["message"],"type":"object"}`
	if canon(t, gotSchema) != wantSchema {
		t.Fatalf("schema:\n got %s\nwant %s", canon(t, gotSchema), wantSchema)
	}

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "garra_ask", Arguments: map[string]any{"message": "Capital of France?"}})
	if err != nil {
		t.Fatal(err)
	}
	var env1 map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &env1); err != nil {
		t.Fatal(err)
	}
	if res.IsError || env1["schema"] != "garra.ask.v1" || env1["ok"] != true || env1["answer"] != "Paris" ||
		env1["provider"] != "openrouter" || env1["model"] != "z-ai/glm-5.3-flash" {
		t.Fatalf("envelope = %v", env1)
	}
	reqs := double.Requests()
	if len(reqs) != 1 || reqs[0].Model != "z-ai/glm-5.3-flash" || reqs[0].MaxTokens != 4096 ||
		reqs[0].Header.Get("Authorization") != "Bearer "+fakeKey {
		t.Fatalf("provider saw %+v", reqs)
	}

	bad := []struct {
		name  string
		args  map[string]any
		field string
	}{
		{"unknown field", map[string]any{"message": "x", "temperature": 1}, "temperature"},
		{"wrong type", map[string]any{"message": []string{"x"}}, "message"},
		{"out of range", map[string]any{"message": "x", "timeout_secs": 601}, "timeout_secs"},
		{"empty message", map[string]any{"message": " \n\t "}, "message"},
		{"provider not in enum", map[string]any{"message": "x", "provider": "mistral"}, "provider"},
		{"model outside allowlist", map[string]any{"message": "x", "model": "openrouter/auto"}, "model"},
		{"timeout above operator cap", map[string]any{"message": "x", "timeout_secs": 121}, "timeout_secs"},
	}
	for _, b := range bad {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "garra_ask", Arguments: b.args})
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.HasPrefix(werr.Message, b.field) {
			t.Errorf("%s: err = %v, want -32602 naming %s", b.name, err, b.field)
		}
	}
	if n := len(double.Requests()); n != 1 {
		t.Fatalf("rejected calls reached the provider: %d requests", n)
	}

	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "garra_agent", Arguments: map[string]any{"message": "x"}})
	if err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Fatalf("garra_agent without opt-in: %v", err)
	}

	_ = cs.Close()
	time.Sleep(50 * time.Millisecond)
	assertJSONRPCOnly(t, stdout.String())
	logs := stderr.String()
	if !strings.Contains(logs, "garra mcp-server starting") || !strings.Contains(logs, "models=z-ai/glm-5.3-flash,other/model") {
		t.Fatalf("boot policy line missing from stderr:\n%s", logs)
	}
	if strings.Contains(logs, "Capital of France") || strings.Contains(logs, "Paris") || strings.Contains(logs, fakeKey) {
		t.Fatalf("stderr leaks a prompt, answer or key:\n%s", logs)
	}
}

func TestStdioServerProviderErrors(t *testing.T) {
	tests := []struct {
		name     string
		step     llmdouble.Step
		timeout  int
		wantKind string
	}{
		{"401", llmdouble.Step{Status: 401, ErrorMessage: "invalid key " + fakeKey}, 10, "provider_error"},
		{"429", llmdouble.Step{Status: 429, ErrorMessage: "slow down"}, 10, "provider_error"},
		{"500", llmdouble.Step{Status: 500, ErrorMessage: "boom"}, 10, "provider_error"},
		{"malformed", llmdouble.Step{Malformed: true}, 10, "provider_error"},
		{"slow", llmdouble.Step{Text: "late", Delay: 5 * time.Second}, 1, "timeout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			double := llmdouble.New(t, tt.step, tt.step, tt.step)
			cfg := writeConfig(t, "openrouter", double.URL()+"/v1")
			cs, stdout, stderr := startServer(t, testEnv(t, "OPENROUTER_API_KEY="+fakeKey), "--config", cfg)
			start := time.Now()
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_ask",
				Arguments: map[string]any{"message": "hi", "timeout_secs": tt.timeout}})
			if err != nil {
				t.Fatal(err)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			var env map[string]any
			if err := json.Unmarshal([]byte(text), &env); err != nil {
				t.Fatal(err)
			}
			e, _ := env["error"].(map[string]any)
			if !res.IsError || env["ok"] != false || env["schema"] != "garra.ask.v1" || e["kind"] != tt.wantKind || e["message"] == "" {
				t.Fatalf("result isError=%v %s", res.IsError, text)
			}
			if strings.Contains(text, fakeKey[12:40]) || strings.Contains(stderr.String(), fakeKey[12:40]) {
				t.Fatalf("key leaked: %s\n%s", text, stderr.String())
			}
			if tt.wantKind == "timeout" && time.Since(start) > 4*time.Second {
				t.Fatalf("timeout took %v", time.Since(start))
			}
			_ = cs.Close()
			time.Sleep(20 * time.Millisecond)
			assertJSONRPCOnly(t, stdout.String())
		})
	}
}

func TestMCPServerHelp(t *testing.T) {
	out, _, code := run(t, testEnv(t), "mcp-server", "--help")
	if code != 0 || !strings.Contains(out, "GARRAIA_MCP_ENABLE_TOOLS") || !strings.Contains(out, "stdout carries JSON-RPC only") {
		t.Fatalf("exit %d, help:\n%s", code, out)
	}
}

func TestMCPServerBadKnobFailsAtBoot(t *testing.T) {
	_, errOut, code := run(t, testEnv(t, "GARRAIA_MCP_MAX_TIMEOUT_SECS=soon"), "mcp-server")
	if code == 0 || !strings.Contains(errOut, "GARRAIA_MCP_MAX_TIMEOUT_SECS") {
		t.Fatalf("exit %d, stderr %s", code, errOut)
	}
}

func canon(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(v)
	return string(out)
}

// tools/list shows the defaults in force: the config's llm.model and the
// operator's timeout cap, and a call that omits them gets those.
func TestStdioServerAdvertisesConfiguredDefaults(t *testing.T) {
	double := llmdouble.New(t, llmdouble.Step{Text: "fine"})
	cfg := filepath.Join(t.TempDir(), "config.yml")
	body := "llm: {provider: openrouter, model: qwen/qwen3-coder, base_url: " + double.URL() + "/v1}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cs, _, _ := startServer(t, testEnv(t, "OPENROUTER_API_KEY="+fakeKey, "GARRAIA_MCP_MAX_TIMEOUT_SECS=45"), "--config", cfg)
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	schema, _ := json.Marshal(tools.Tools[0].InputSchema)
	for _, want := range []string{`"default":"qwen/qwen3-coder"`, `"default":45`, `"default":"openrouter"`} {
		if !strings.Contains(canon(t, schema), want) {
			t.Errorf("schema lacks %s: %s", want, canon(t, schema))
		}
	}
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "garra_ask", Arguments: map[string]any{"message": "hi"}}); err != nil {
		t.Fatal(err)
	}
	if reqs := double.Requests(); len(reqs) != 1 || reqs[0].Model != "qwen/qwen3-coder" {
		t.Fatalf("provider saw %+v", reqs)
	}
}
