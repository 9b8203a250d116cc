package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/sandbox"
	"github.com/garraia/garra/test/fakes/llmdouble"
	"github.com/garraia/garra/test/testlog"
)

// disconnectBound is how soon after the client goes away its run must be
// cancelled. Measured on loopback: a few milliseconds; the bound leaves
// room for a loaded machine.
const disconnectBound = 3 * time.Second

// hangingLLM is an OpenAI-compatible endpoint that never answers: it
// reports when a request arrives and when that request is aborted.
func hangingLLM(t *testing.T) (url string, arrived, aborted chan time.Time) {
	t.Helper()
	arrived, aborted = make(chan time.Time, 4), make(chan time.Time, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		// net/http notices a closed connection only once the body is read.
		_, _ = io.Copy(io.Discard, r.Body)
		arrived <- time.Now()
		select {
		case <-r.Context().Done():
			aborted <- time.Now()
		case <-time.After(time.Minute):
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", arrived, aborted
}

const agentCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"garra_agent","arguments":{"message":"take your time"}}}`

// startCall POSTs a garra_agent call on its own connection (raw HTTP,
// so no MCP-Protocol-Version header: the SDK treats it as 2025-03-26) and
// returns the function that drops the connection.
func startCall(t *testing.T, url, token string) (hangUp func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/mcp", strings.NewReader(agentCall))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	done := make(chan struct{})
	go func() {
		defer close(done)
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err == nil {
			_ = resp.Body.Close()
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return cancel
}

func TestClientDisconnectCancelsTheAgentRun(t *testing.T) {
	for _, tt := range []struct {
		name string
		// start begins the call and returns the hang-up.
		start func(t *testing.T, url, token string) func()
	}{
		{"raw HTTP, protocol 2025-03-26", startCall},
		{"go-sdk client, its default protocol", func(t *testing.T, url, token string) func() {
			ctx, cancel := context.WithCancel(context.Background())
			cs := client(t, url, token)
			go func() {
				_, _ = cs.CallTool(ctx, &mcp.CallToolParams{Name: "garra_agent", Arguments: map[string]any{"message": "take your time"}})
			}()
			t.Cleanup(cancel)
			return cancel
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			llmURL, arrived, aborted := hangingLLM(t)
			yaml := enabled + "    allow_agent: true\n    agent_max_seconds: 600\n" + twoAgents +
				"llm: {provider: openrouter, base_url: " + llmURL + "}\n"
			h := start(t, yaml, map[string]string{"ALPHA_KEY": "alpha-token-1234567", "OPENROUTER_API_KEY": "llm-test-key-0123"})
			hangUp := tt.start(t, h.url, "alpha-token-1234567")
			select {
			case <-arrived:
			case <-time.After(10 * time.Second):
				t.Fatal("the agent never called the model")
			}
			hungUp := time.Now()
			hangUp()
			select {
			case at := <-aborted:
				t.Logf("model request aborted %v after the client hung up", at.Sub(hungUp))
				if d := at.Sub(hungUp); d > disconnectBound {
					t.Fatalf("cancelled after %v, bound %v", d, disconnectBound)
				}
			case <-time.After(disconnectBound):
				t.Fatal("the model request outlived the client's connection")
			}
			// The run ended as cancelled, well before agent_max_seconds.
			deadline := time.Now().Add(disconnectBound)
			for !strings.Contains(h.logs.String(), "tool=garra_agent outcome=cancelled error_kind=cancelled") {
				if time.Now().After(deadline) {
					t.Fatalf("no end-of-run line:\n%s", h.logs.String())
				}
				time.Sleep(10 * time.Millisecond)
			}
			// A cancel is its own outcome, not a provider failure.
			if m := metricsText(t, h.url); !strings.Contains(m, `garra_mcp_calls_total{outcome="cancelled",tool="garra_agent"} 1`) {
				t.Fatalf("metrics:\n%s", grep(m, "garra_mcp_calls_total"))
			}
		})
	}
}

// The sandbox command the run started is killed too: gateway → sandbox
// HTTP request aborted → the sandbox cancels bash's process group.
func TestClientDisconnectKillsTheSandboxCommand(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("needs /proc to find the command")
	}
	sbxURL, sbxLogs, _ := startSandbox(t)

	// A duration no other process on the machine uses.
	marker := "29." + strconv.Itoa(os.Getpid()%1000+100)
	double := llmdouble.New(t,
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "bash", Args: `{"command":"sleep ` + marker + `"}`}}},
		llmdouble.Step{Text: "unreached"})
	h := startWithSandbox(t, sbxURL, double.OpenAIBaseURL(), "    agent_max_seconds: 600\n")
	hangUp := startCall(t, h.url, "alpha-token-1234567")

	deadline := time.Now().Add(10 * time.Second)
	for !sleeping(marker) {
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox never started the command; sandbox log:\n%s", sbxLogs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	hungUp := time.Now()
	hangUp()
	for sleeping(marker) {
		if time.Since(hungUp) > disconnectBound {
			t.Fatalf("the sandbox command outlived the client's connection by %v", time.Since(hungUp))
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("sandbox command gone %v after the client hung up", time.Since(hungUp))
	for !strings.Contains(sbxLogs.String(), "tool=bash outcome=error") {
		if time.Since(hungUp) > disconnectBound {
			t.Fatalf("the sandbox did not log the cancelled call:\n%s", sbxLogs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := len(double.Requests()); n != 1 {
		t.Fatalf("the model was asked %d times; the cancelled run must not continue", n)
	}
}

const sandboxToken = "sandbox-token-0123456789abcdef"

// startWithSandbox starts a gateway whose one orchestrator, alpha (key
// alpha-token-1234567), runs garra_agent in the sandbox at sbxURL with
// the model at llmURL; extra adds lines under mcp_http.
func startWithSandbox(t *testing.T, sbxURL, llmURL, extra string) *harness {
	t.Helper()
	yaml := enabled + "    allow_agent: true\n" + extra + `
    orchestrators:
      - name: alpha
        key_env: ALPHA_KEY
        tools: [agent]
        sandbox: {url: "` + sbxURL + `", token_env: SBX_TOKEN}
` + "llm: {provider: openrouter, base_url: " + llmURL + "}\n"
	return start(t, yaml, map[string]string{"ALPHA_KEY": "alpha-token-1234567", "OPENROUTER_API_KEY": "llm-test-key-0123", "SBX_TOKEN": sandboxToken})
}

// startSandbox serves a real `garra sandbox` on 127.0.0.1 over a temp
// workspace: its MCP URL, its log and the workspace. opts adjust its
// options.
func startSandbox(t *testing.T, opts ...func(*sandbox.Options)) (url string, logs *testlog.Buffer, workspace string) {
	t.Helper()
	workspace = t.TempDir()
	logs = &testlog.Buffer{}
	// An empty toolchain PATH: each run reads the toolchain, and this
	// machine's own PATH would make its first discovery slow.
	o := sandbox.Options{Workspace: workspace, Token: sandboxToken, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		ToolchainPATH: t.TempDir()}
	for _, f := range opts {
		f(&o)
	}
	srv, err := sandbox.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { stop(); <-served })
	return "http://" + ln.Addr().String() + "/mcp", logs, workspace
}

// sleeping reports whether a process runs `sleep <marker>`.
func sleeping(marker string) bool {
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, f := range dirs {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if args := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"); len(args) == 2 && filepath.Base(args[0]) == "sleep" && args[1] == marker {
			return true
		}
	}
	return false
}
