package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/gateway"
	"github.com/garraia/garra/test/fakes/llmdouble"
	"github.com/garraia/garra/test/testlog"
)

const ownerKey = "owner-key-0123456789-0123456789abcdef"

type syncBuffer = testlog.Buffer

type harness struct {
	url   string
	logs  *syncBuffer
	gw    *gateway.Gateway
	cfg   *config.Config
	env   map[string]string
	close func()
}

// start serves a gateway built from yaml on 127.0.0.1. data_dir is a temp
// dir unless the yaml sets one.
func start(t *testing.T, yaml string, env map[string]string, opts ...func(*gateway.Options)) *harness {
	t.Helper()
	cfg, _, err := config.Load(writeFile(t, yaml), func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DataDir == "~/.garraia" {
		cfg.DataDir = t.TempDir()
	}
	logs := &syncBuffer{}
	o := gateway.Options{Config: cfg, Getenv: func(k string) string { return env[k] }, Version: "test",
		Logger: slog.New(slog.NewTextHandler(logs, nil))}
	for _, f := range opts {
		f(&o)
	}
	g, err := gateway.New(o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	return &harness{url: srv.URL, logs: logs, gw: g, cfg: cfg, env: env, close: srv.Close}
}

func writeFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

const toolsList = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`

// post sends a raw JSON-RPC POST the way curl does.
func post(t *testing.T, url, token, body string, hdr map[string]string) (int, string) {
	t.Helper()
	return request(t, http.MethodPost, url, token, body, hdr)
}

// request sends a raw request to /mcp with the headers an MCP client sends,
// overridden by hdr (a "Host" entry sets the Host header).
func request(t *testing.T, method, url, token, body string, hdr map[string]string) (int, string) {
	t.Helper()
	code, _, b := requestFull(t, method, url, token, body, hdr)
	return code, b
}

// requestFull is request with the response's headers.
func requestFull(t *testing.T, method, url, token, body string, hdr map[string]string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	if h, ok := hdr["Host"]; ok {
		req.Host = h
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

const enabled = "gateway:\n  api_key: " + ownerKey + "\n  mcp_http:\n    enabled: true\n"

func TestRouteAbsentUnlessEnabledWithKey(t *testing.T) {
	for name, yaml := range map[string]string{
		"disabled":        "gateway: {api_key: " + ownerKey + "}\n",
		"enabled, no key": "gateway: {mcp_http: {enabled: true}}\n",
	} {
		t.Run(name, func(t *testing.T) {
			h := start(t, yaml, nil)
			if code, _ := post(t, h.url, ownerKey, toolsList, nil); code != http.StatusNotFound {
				t.Fatalf("status %d, want 404", code)
			}
			resp, err := http.Get(h.url + "/healthz")
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("healthz: %v %v", resp, err)
			}
			resp.Body.Close()
			if name == "enabled, no key" && !strings.Contains(h.logs.String(), "fix=\"set gateway.api_key or GARRAIA_GATEWAY_API_KEY\"") {
				t.Fatalf("no boot warning naming the fix:\n%s", h.logs.String())
			}
		})
	}
}

func TestBootLine(t *testing.T) {
	h := start(t, enabled, nil)
	if !strings.Contains(h.logs.String(), "ponte MCP Streamable HTTP montada (host: so loopback) rota=/mcp envio_liberado=false destinos_liberados=0") {
		t.Fatalf("boot line missing:\n%s", h.logs.String())
	}
}

func TestTransportRules(t *testing.T) {
	h := start(t, "gateway:\n  api_key: "+ownerKey+"\n  allowed_hosts: [team-a-gateway.agents.svc]\n  mcp_http: {enabled: true}\n", nil)
	tests := []struct {
		name  string
		token string
		body  string
		hdr   map[string]string
		code  int
		want  string
	}{
		{"ok", ownerKey, toolsList, nil, 200, "garra_status"},
		{"missing bearer", "", toolsList, nil, 401, `"error":"unauthorized"`},
		{"wrong bearer", "owner-key-0123456788", toolsList, nil, 401, `"error":"unauthorized"`},
		{"Accept json only", ownerKey, toolsList, map[string]string{"Accept": "application/json"}, 406, "not_acceptable"},
		{"rebinding Host", ownerKey, toolsList, map[string]string{"Host": "evil.example.com"}, 403, "Host"},
		{"allowed Host", ownerKey, toolsList, map[string]string{"Host": "team-a-gateway.agents.svc:3888"}, 200, "garra_status"},
		{"browser Origin", ownerKey, toolsList, map[string]string{"Origin": "https://evil.example.com", "Sec-Fetch-Site": "cross-site"}, 403, "cross-origin"},
		{"wrong content type", ownerKey, toolsList, map[string]string{"Content-Type": "text/plain"}, 415, ""},
		{"body over 4 MiB", ownerKey, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"` + strings.Repeat("a", 4<<20) + `"}}`, nil, 413, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := post(t, h.url, tt.token, tt.body, tt.hdr)
			if code != tt.code || !strings.Contains(body, tt.want) {
				t.Fatalf("status %d body %.300s; want %d containing %q", code, body, tt.code, tt.want)
			}
			if strings.Contains(body, "Mcp-Session-Id") {
				t.Fatal("stateless transport leaked a session id")
			}
		})
	}
}

func TestCurlExampleVerbatim(t *testing.T) {
	h := start(t, enabled, nil)
	code, body := post(t, h.url, ownerKey, toolsList, nil)
	var resp struct {
		Result struct {
			Tools []struct{ Name string } `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || code != 200 {
		t.Fatalf("status %d body %s err %v", code, body, err)
	}
	var names []string
	for _, tl := range resp.Result.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, " ") != "garra_list_chats garra_pair_status garra_read_history garra_status" {
		t.Fatalf("owner tools: %v", names)
	}
}

func TestRateLimitPerIP(t *testing.T) {
	h := start(t, "gateway:\n  api_key: "+ownerKey+"\n  rate_limit: {requests_per_minute: 3}\n  mcp_http: {enabled: true}\n", nil)
	for i := range 3 {
		if code, _ := post(t, h.url, ownerKey, toolsList, nil); code != 200 {
			t.Fatalf("request %d: %d", i, code)
		}
	}
	if code, body := post(t, h.url, ownerKey, toolsList, nil); code != 429 || !strings.Contains(body, "too_many_requests") {
		t.Fatalf("4th request: %d %s", code, body)
	}
}

// client connects the go-sdk client with a bearer token.
func client(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: bearer{token}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func toolNames(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return strings.Join(names, " ")
}

// call returns the envelope of a tool call as a map, and isError.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	var env map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &env); err != nil {
		t.Fatal(err)
	}
	return env, res.IsError
}

func kindOf(env map[string]any) string {
	e, _ := env["error"].(map[string]any)
	k, _ := e["kind"].(string)
	return k
}

const orchestrators = `
    orchestrators:
      - name: badgood
        key_env: BADGOOD_KEY
        tools: [status, agent]
      - nome: n8n
        key_env: N8N_KEY
        tools: [status, list_chats, read_history, send_message, ask]
        chats: ["telegram:111"]
      - name: ghost
        key_env: GHOST_KEY
        tools: [status]
`

var orchEnv = map[string]string{"BADGOOD_KEY": "badgood-token-123456", "N8N_KEY": "n8n-token-1234567890"}

func TestToolsListPerCaller(t *testing.T) {
	h := start(t, enabled+"    allow_agent: true\n    allow_ask: true\n    allow_send: true\n"+orchestrators+
		"channels: {telegram: {proactive_chat_ids: ['111', '222']}}\n", orchEnv)
	for token, want := range map[string]string{
		ownerKey:               "garra_ask garra_list_chats garra_pair_status garra_read_history garra_send_message garra_status",
		"badgood-token-123456": "garra_agent garra_status",
		"n8n-token-1234567890": "garra_ask garra_list_chats garra_read_history garra_send_message garra_status",
	} {
		if got := toolNames(t, client(t, h.url, token)); got != want {
			t.Errorf("%s sees %q, want %q", token[:5], got, want)
		}
	}
	// The orchestrator whose variable is unset is disabled, loudly.
	if !strings.Contains(h.logs.String(), "orchestrator disabled") || !strings.Contains(h.logs.String(), "GHOST_KEY") {
		t.Fatalf("no warning for the disabled orchestrator:\n%s", h.logs.String())
	}
	if code, _ := post(t, h.url, "", toolsList, map[string]string{"Authorization": "Bearer "}); code != 401 {
		t.Fatalf("an empty bearer got %d", code)
	}
}

func TestHiddenToolsAreRefusedWithStableKinds(t *testing.T) {
	h := start(t, enabled+orchestrators, orchEnv)
	badgood := client(t, h.url, "badgood-token-123456")
	n8n := client(t, h.url, "n8n-token-1234567890")
	owner := client(t, h.url, ownerKey)
	tests := []struct {
		name string
		cs   *mcp.ClientSession
		tool string
		args map[string]any
		kind string
	}{
		{"agent off", badgood, "garra_agent", map[string]any{"message": "x"}, "agent_disabled"},
		{"ask off", n8n, "garra_ask", map[string]any{"message": "x"}, "ask_disabled"},
		{"send off", owner, "garra_send_message", map[string]any{"chat_id": "111", "text": "hi"}, "send_disabled"},
		{"read not granted", badgood, "garra_list_chats", nil, "tool_not_allowed"},
		{"pair not granted", n8n, "garra_pair_status", nil, "tool_not_allowed"},
		{"owner has no agent (off first)", owner, "garra_agent", map[string]any{"message": "x"}, "agent_disabled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, isErr := call(t, tt.cs, tt.tool, tt.args)
			if !isErr || env["ok"] != false || kindOf(env) != tt.kind {
				t.Fatalf("isError=%v env=%v, want kind %s", isErr, env, tt.kind)
			}
		})
	}
	if m := metricsText(t, h.url); !strings.Contains(m, `garra_mcp_refusals_total{kind="agent_disabled"} 2`) {
		t.Fatalf("refusal metric missing:\n%s", grep(m, "refusals"))
	}
}

// fakeSender is an online Telegram channel that records sends.
type fakeSender struct {
	mu   sync.Mutex
	sent []string
	fail error
}

func (f *fakeSender) Online(ch string) bool { return ch == "telegram" }

func (f *fakeSender) Send(_ context.Context, _, chatID, text string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.sent = append(f.sent, chatID+":"+text)
	return nil
}

func TestSendPolicy(t *testing.T) {
	sender := &fakeSender{}
	yaml := enabled + "    allow_send: true\n" + orchestrators + "channels: {telegram: {proactive_chat_ids: ['111', '222']}}\n"
	h := start(t, yaml, orchEnv, func(o *gateway.Options) { o.Sender = sender })
	owner := client(t, h.url, ownerKey)
	n8n := client(t, h.url, "n8n-token-1234567890")

	tests := []struct {
		name string
		cs   *mcp.ClientSession
		args map[string]any
		kind string
	}{
		{"approved", owner, map[string]any{"chat_id": "111", "text": "hello sk-or-v1-abcdefabcdefabcdefabcdefabcdefabcdefabcdef0123"}, ""},
		{"not approved", owner, map[string]any{"chat_id": "987654321", "text": "x"}, "target_not_allowed"},
		{"other channel", owner, map[string]any{"channel": "web", "chat_id": "111", "text": "x"}, "channel_unsupported"},
		{"outside the orchestrator's chats", n8n, map[string]any{"chat_id": "222", "text": "x"}, "target_not_allowed"},
		{"orchestrator in scope", n8n, map[string]any{"chat_id": "111", "text": "x"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, isErr := call(t, tt.cs, "garra_send_message", tt.args)
			if kindOf(env) != tt.kind || isErr != (tt.kind != "") {
				t.Fatalf("env %v", env)
			}
			if strings.Contains(fmt.Sprint(env), "987654321") {
				t.Fatal("refusal echoes the chat id")
			}
		})
	}
	if len(sender.sent) != 2 || strings.Contains(sender.sent[0], "abcdefabcdef") {
		t.Fatalf("sent %v (secrets must be redacted on the way out)", sender.sent)
	}
	// The shared budget: 5 per minute across every caller; 2 used above.
	kinds := []string{}
	for range 4 {
		env, _ := call(t, owner, "garra_send_message", map[string]any{"chat_id": "111", "text": "x"})
		kinds = append(kinds, kindOf(env))
	}
	if strings.Join(kinds, ",") != ",,,rate_limited" {
		t.Fatalf("budget kinds %v", kinds)
	}
}

func TestSendDeliveryFailedHidesChannelText(t *testing.T) {
	sender := &fakeSender{fail: errors.New("Bad Request: chat 111 not found, token 123456:AAAA")}
	h := start(t, enabled+"    allow_send: true\nchannels: {telegram: {proactive_chat_ids: ['111']}}\n", nil, func(o *gateway.Options) { o.Sender = sender })
	env, isErr := call(t, client(t, h.url, ownerKey), "garra_send_message", map[string]any{"chat_id": "111", "text": "x"})
	if !isErr || kindOf(env) != "delivery_failed" || strings.Contains(fmt.Sprint(env), "Bad Request") || strings.Contains(fmt.Sprint(env), "111") {
		t.Fatalf("env %v", env)
	}
	if !strings.Contains(h.logs.String(), "send failed") {
		t.Fatal("the channel's reason must reach the log")
	}
}

func TestSendChannelOffline(t *testing.T) {
	h := start(t, enabled+"    allow_send: true\nchannels: {telegram: {proactive_chat_ids: ['111']}}\n", nil)
	env, _ := call(t, client(t, h.url, ownerKey), "garra_send_message", map[string]any{"chat_id": "111", "text": "x"})
	if kindOf(env) != "channel_offline" {
		t.Fatalf("env %v", env)
	}
}

func TestAskBudgetExactUnderConcurrency(t *testing.T) {
	double := llmdouble.New(t) // echo
	yaml := enabled + "    allow_ask: true\n    ask_budget_per_minute: 3\nllm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
	h := start(t, yaml, map[string]string{"OPENROUTER_API_KEY": "llm-test-key-0123"})
	cs := client(t, h.url, ownerKey)
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[string]int{}
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env, _ := call(t, cs, "garra_ask", map[string]any{"message": "ping"})
			mu.Lock()
			defer mu.Unlock()
			if env["ok"] == true {
				counts["ok"]++
			} else {
				counts[kindOf(env)]++
			}
		}()
	}
	wg.Wait()
	if counts["ok"] != 3 || counts["over_budget"] != 47 || len(double.Requests()) != 3 {
		t.Fatalf("counts %v, provider saw %d", counts, len(double.Requests()))
	}
}

func TestAskPolicy(t *testing.T) {
	double := llmdouble.New(t, llmdouble.Step{Text: "pong"}, llmdouble.Step{Status: 401, ErrorMessage: "bad key corp-123456"})
	yaml := enabled + "    allow_ask: true\n    redact_patterns: ['corp-[0-9]{6}']\nllm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
	h := start(t, yaml, map[string]string{"OPENROUTER_API_KEY": "llm-test-key-0123"})
	cs := client(t, h.url, ownerKey)

	env, isErr := call(t, cs, "garra_ask", map[string]any{"message": "secret question"})
	if isErr || env["schema"] != "garra.ask.v1" || env["answer"] != "pong" || env["model"] != "z-ai/glm-5.3-flash" {
		t.Fatalf("env %v", env)
	}
	env, _ = call(t, cs, "garra_ask", map[string]any{"message": "x", "model": "openrouter/auto"})
	if kindOf(env) != "model_not_allowed" || env["schema"] != "garra.ask.v1" {
		t.Fatalf("env %v", env)
	}
	env, _ = call(t, cs, "garra_ask", map[string]any{"message": "x"})
	if kindOf(env) != "provider_error" || strings.Contains(fmt.Sprint(env), "corp-123456") {
		t.Fatalf("error path must apply redact_patterns: %v", env)
	}
	if len(double.Requests()) != 2 {
		t.Fatal("model_not_allowed reached the provider")
	}
	for _, bad := range []map[string]any{
		{"message": "x", "provider": "local"}, {"message": "x", "extra": 1}, {"message": "x", "timeout_secs": 601}, {"message": ""},
	} {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_ask", Arguments: bad})
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
			t.Errorf("%v: err %v, want -32602", bad, err)
		}
	}
	if logs := h.logs.String(); strings.Contains(logs, "secret question") || strings.Contains(logs, "pong") {
		t.Fatalf("prompt or answer logged:\n%s", logs)
	}
}

// A call that names no provider or model gets the config's llm.provider
// and llm.model (what a GarraServer's spec.llm renders), its key from
// llm.api_key_env; an empty ask_allowed_models then admits that model only.
func TestAskAndAgentDefaultToConfiguredModel(t *testing.T) {
	double := llmdouble.New(t, llmdouble.Step{Text: "asked"}, llmdouble.Step{Text: "delegated"})
	yaml := enabled + "    allow_ask: true\n    allow_agent: true\n" + `
    orchestrators:
      - name: alpha
        key_env: ALPHA_KEY
        tools: [ask, agent]
` + "llm: {provider: openai, model: team-model, api_key_env: TEAM_LLM_KEY, base_url: " + double.OpenAIBaseURL() + "}\n"
	h := start(t, yaml, map[string]string{"ALPHA_KEY": "alpha-token-1234567", "TEAM_LLM_KEY": "team-key-1"})
	cs := client(t, h.url, "alpha-token-1234567")

	env, isErr := call(t, cs, "garra_ask", map[string]any{"message": "q"})
	if isErr || env["answer"] != "asked" || env["provider"] != "openai" || env["model"] != "team-model" {
		t.Fatalf("garra_ask: %v", env)
	}
	env, isErr = call(t, cs, "garra_agent", map[string]any{"message": "task"})
	if isErr || env["answer"] != "delegated" || env["provider"] != "openai" || env["model"] != "team-model" {
		t.Fatalf("garra_agent: %v", env)
	}
	for i, r := range double.Requests() {
		if r.Model != "team-model" || r.APIKey() != "team-key-1" {
			t.Errorf("request %d: model %q key %q, want the configured ones", i, r.Model, r.APIKey())
		}
	}
	// The project's default model is not the default here, so it is not
	// admitted by the empty list.
	env, _ = call(t, cs, "garra_ask", map[string]any{"message": "q", "model": "z-ai/glm-5.3-flash"})
	if kindOf(env) != "model_not_allowed" {
		t.Fatalf("project model with llm.model set: %v", env)
	}
	if n := len(double.Requests()); n != 2 {
		t.Fatalf("%d provider requests, want 2", n)
	}
}

func TestStatusAndReads(t *testing.T) {
	store := &memStore{convs: []chat.Conversation{{ID: "telegram:111", Channel: "telegram", Messages: 2}, {ID: "web:1", Channel: "web", Messages: 1}},
		msgs: map[string][]chat.Message{"telegram:111": {{Role: "user", Text: "my key is sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}, {Role: "assistant", Text: "ok"}}}}
	h := start(t, enabled+orchestrators, orchEnv, func(o *gateway.Options) { o.Store = store })
	owner := client(t, h.url, ownerKey)
	env, _ := call(t, owner, "garra_status", nil)
	data := env["data"].(map[string]any)
	if env["schema"] != "garra.mcp.v1" || data["version"] != "test" || data["conversations"] != float64(2) {
		t.Fatalf("status %v", env)
	}
	env, _ = call(t, owner, "garra_list_chats", map[string]any{"channel": "web"})
	if rows := env["data"].(map[string]any)["chats"].([]any); len(rows) != 1 {
		t.Fatalf("filter by channel: %v", env)
	}
	env, _ = call(t, owner, "garra_read_history", map[string]any{"chat": "telegram:111", "limit": 5})
	d := env["data"].(map[string]any)
	if d["redacted"] != true || strings.Contains(fmt.Sprint(d), "AAAAAAAAAAAAAAAA") || len(d["messages"].([]any)) != 2 {
		t.Fatalf("history %v", env)
	}
	// n8n is scoped to telegram:111: it sees one chat and reads nothing else.
	n8n := client(t, h.url, "n8n-token-1234567890")
	env, _ = call(t, n8n, "garra_list_chats", nil)
	if rows := env["data"].(map[string]any)["chats"].([]any); len(rows) != 1 {
		t.Fatalf("scoped list %v", env)
	}
	env, _ = call(t, n8n, "garra_read_history", map[string]any{"chat": "web:1"})
	if kindOf(env) != "not_found" {
		t.Fatalf("out-of-scope read %v", env)
	}
	_, err := owner.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_read_history", Arguments: map[string]any{"chat": "x", "limit": 51}})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || !strings.HasPrefix(werr.Message, "limit") {
		t.Fatalf("limit above max_history_messages: %v", err)
	}
}

type memStore struct {
	convs []chat.Conversation
	msgs  map[string][]chat.Message
}

func (m *memStore) Conversations(_ context.Context, channel string) ([]chat.Conversation, error) {
	var out []chat.Conversation
	for _, c := range m.convs {
		if channel == "" || c.Channel == channel {
			out = append(out, c)
		}
	}
	return out, nil
}

func (m *memStore) History(_ context.Context, id string, limit int) ([]chat.Message, error) {
	msgs, ok := m.msgs[id]
	if !ok {
		return nil, chat.ErrNotFound
	}
	return append([]chat.Message(nil), msgs[max(0, len(msgs)-limit):]...), nil
}

func (m *memStore) Pairing(context.Context) ([]chat.PairStatus, error) { return nil, nil }

func metricsText(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func grep(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
