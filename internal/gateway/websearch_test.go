package gateway_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/garraia/garra/test/fakes/llmdouble"
)

// braveDouble stands in for the Brave Search API on 127.0.0.1.
func braveDouble(t *testing.T, key string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path != "/res/v1/web/search" || r.Header.Get("X-Subscription-Token") != key || r.URL.Query().Get("q") != "garra operator" {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"web":{"results":[{"title":"Garra operator","url":"https://garra.example/op","description":"Runs MCP agents."}]}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

const sandboxedAlpha = `
    orchestrators:
      - name: alpha
        key_env: ALPHA_KEY
        tools: [agent]
        sandbox: {url: "%s", token_env: SBX_TOKEN}
`

// A sandboxed (cluster) agent gets web_search, served by the gateway with
// its own key, next to the sandbox's tools; the sandbox never sees it.
func TestSandboxedAgentGetsWebSearchFromTheGateway(t *testing.T) {
	const braveKey = "brave-key-held-by-the-gateway"
	brave, hits := braveDouble(t, braveKey)
	sbxURL, sbxLogs, ws := startSandbox(t)
	double := llmdouble.New(t,
		llmdouble.Step{ToolCalls: []llmdouble.Call{
			{Name: "web_search", Args: `{"query":"garra operator","count":3}`},
			{Name: "file_write", Args: `{"path":"notes.txt","content":"found it"}`},
		}},
		llmdouble.Step{Text: "done"})
	yaml := enabled + "    allow_agent: true\n    agent_max_seconds: 60\n" + fmt.Sprintf(sandboxedAlpha, sbxURL) +
		"llm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + ", brave: {base_url: " + brave.URL + "}}\n"
	h := start(t, yaml, map[string]string{"ALPHA_KEY": "alpha-token-1234567", "OPENROUTER_API_KEY": "llm-test-key-0123",
		"SBX_TOKEN": sandboxToken, "BRAVE_API_KEY": braveKey})

	res, isErr := call(t, client(t, h.url, "alpha-token-1234567"), "garra_agent", map[string]any{"message": "research"})
	calls, _ := res["tool_calls"].([]any)
	if isErr || res["ok"] != true || len(calls) != 2 {
		t.Fatalf("run: %v", res)
	}
	for _, c := range calls {
		if c.(map[string]any)["success"] != true {
			t.Fatalf("tool call failed: %v", c)
		}
	}
	reqs := double.Requests()
	if got := strings.Join(reqs[0].ToolNames, " "); got != "bash file_read file_write git_diff web_fetch web_search" {
		t.Fatalf("tools offered to the model: %q", got)
	}
	if !strings.Contains(string(reqs[1].RawBody), "https://garra.example/op") {
		t.Fatalf("the search result did not reach the model:\n%s", reqs[1].RawBody)
	}
	if hits.Load() != 1 {
		t.Fatalf("Brave double hit %d times", hits.Load())
	}
	// file_write ran in the sandbox; web_search did not.
	if b, err := os.ReadFile(filepath.Join(ws, "notes.txt")); err != nil || string(b) != "found it" {
		t.Fatalf("sandbox workspace: %q %v", b, err)
	}
	if l := sbxLogs.String(); strings.Contains(l, "web_search") || !strings.Contains(l, "tool=file_write outcome=ok") {
		t.Fatalf("sandbox log:\n%s", l)
	}
	if strings.Contains(h.logs.String(), braveKey) || strings.Contains(string(reqs[1].RawBody), braveKey) {
		t.Fatal("the Brave key leaked")
	}
}

// Without a key there is no web_search, for sandboxed agents as for local
// ones.
func TestNoBraveKeyNoWebSearch(t *testing.T) {
	sbxURL, _, _ := startSandbox(t)
	double := llmdouble.New(t, llmdouble.Step{Text: "ok"})
	yaml := enabled + "    allow_agent: true\n    agent_max_seconds: 60\n" + fmt.Sprintf(sandboxedAlpha, sbxURL) +
		"llm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
	h := start(t, yaml, map[string]string{"ALPHA_KEY": "alpha-token-1234567", "OPENROUTER_API_KEY": "llm-test-key-0123", "SBX_TOKEN": sandboxToken})
	if res, _ := call(t, client(t, h.url, "alpha-token-1234567"), "garra_agent", map[string]any{"message": "x"}); res["ok"] != true {
		t.Fatalf("run: %v", res)
	}
	if got := strings.Join(double.Requests()[0].ToolNames, " "); strings.Contains(got, "web_search") || !strings.Contains(got, "file_write") {
		t.Fatalf("tools offered: %q", got)
	}
}
