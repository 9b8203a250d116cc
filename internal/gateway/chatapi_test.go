package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/chat/sqlitestore"
	"github.com/garraia/garra/internal/gateway"
	"github.com/garraia/garra/test/fakes/llmdouble"
)

// openStore is a real SQLite store in a temp dir.
func openStore(t *testing.T, allow ...string) *sqlitestore.Store {
	t.Helper()
	s, err := sqlitestore.Open(context.Background(), filepath.Join(t.TempDir(), "garra.db"),
		sqlitestore.Options{Allowlists: map[string][]string{"telegram": allow}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func withStore(s chat.Store) func(*gateway.Options) {
	return func(o *gateway.Options) { o.Store = s }
}

// api sends one chat API request; body "" sends none. It returns the status
// and the decoded JSON body.
func api(t *testing.T, method, url, token, body string, hdr map[string]string) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
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
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	if out == nil {
		out = map[string]any{"raw": string(raw)}
	}
	return resp.StatusCode, out
}

// keyOnly has the gateway key but no MCP bridge: the chat API does not
// depend on mcp_http.enabled.
const keyOnly = "gateway:\n  api_key: " + ownerKey + "\n  mcp_http:\n"

func TestChatAPIIsTheOwners(t *testing.T) {
	for name, yaml := range map[string]string{"bridge off": keyOnly, "bridge on": enabled} {
		t.Run(name, func(t *testing.T) {
			store := openStore(t)
			_ = store.Append(context.Background(), "telegram:111", "telegram", chat.Message{Role: "user", Text: "hi"})
			h := start(t, yaml+orchestrators, orchEnv, withStore(store))
			tests := []struct {
				name, method, path, token, body string
				hdr                             map[string]string
				code                            int
				errKind                         string
			}{
				{"owner", "GET", "/api/sessions", ownerKey, "", nil, 200, ""},
				{"no bearer", "GET", "/api/sessions", "", "", nil, 401, "unauthorized"},
				{"wrong key", "GET", "/api/sessions", "owner-key-0123456788", "", nil, 401, "unauthorized"},
				{"orchestrator", "GET", "/api/sessions", "n8n-token-1234567890", "", nil, 403, "forbidden"},
				{"orchestrator reads", "GET", "/api/sessions/telegram:111/messages", "n8n-token-1234567890", "", nil, 403, "forbidden"},
				{"orchestrator posts", "POST", "/api/sessions/new/messages", "badgood-token-123456", `{"text":"x"}`, nil, 403, "forbidden"},
				{"rebinding Host", "GET", "/api/sessions", ownerKey, "", map[string]string{"Host": "evil.example.com"}, 403, "forbidden"},
				{"cross-site POST", "POST", "/api/sessions/new/messages", ownerKey, `{"text":"x"}`,
					map[string]string{"Origin": "https://evil.example.com", "Sec-Fetch-Site": "cross-site"}, 403, "forbidden"},
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					code, body := api(t, tt.method, h.url+tt.path, tt.token, tt.body, tt.hdr)
					if code != tt.code || (tt.errKind != "" && body["error"] != tt.errKind) {
						t.Fatalf("%d %v; want %d %s", code, body, tt.code, tt.errKind)
					}
				})
			}
		})
	}
}

func TestChatAPIAbsentWithoutAKey(t *testing.T) {
	h := start(t, "gateway: {}\n", nil, withStore(openStore(t)))
	if code, _ := api(t, "GET", h.url+"/api/sessions", ownerKey, "", nil); code != 404 {
		t.Fatalf("status %d", code)
	}
	if !strings.Contains(h.logs.String(), "chat API not mounted") {
		t.Fatalf("no boot line:\n%s", h.logs.String())
	}
}

func TestChatAPIRateLimited(t *testing.T) {
	h := start(t, "gateway:\n  api_key: "+ownerKey+"\n  rate_limit: {requests_per_minute: 2}\n", nil, withStore(openStore(t)))
	for range 2 {
		api(t, "GET", h.url+"/api/sessions", ownerKey, "", nil)
	}
	if code, body := api(t, "GET", h.url+"/api/sessions", ownerKey, "", nil); code != 429 || body["error"] != "too_many_requests" {
		t.Fatalf("%d %v", code, body)
	}
}

func TestChatAPIRoundTrip(t *testing.T) {
	double := llmdouble.New(t) // echo
	store := openStore(t)
	ctx := context.Background()
	_ = store.Append(ctx, "telegram:111", "telegram", chat.Message{Role: "user", Text: "from telegram, token sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"})
	yaml := keyOnly + "llm: {provider: openrouter, model: my-model, base_url: " + double.OpenAIBaseURL() + "}\n"
	h := start(t, yaml, map[string]string{"OPENROUTER_API_KEY": "llm-test-key-0123"}, withStore(store))

	// A new web conversation.
	code, body := api(t, "POST", h.url+"/api/sessions/new/messages", ownerKey, `{"text":"  my name is Ana  "}`, nil)
	id, _ := body["chat"].(string)
	reply, _ := body["reply"].(map[string]any)
	if code != 201 || !strings.HasPrefix(id, "web:") || len(id) != len("web:")+36 || body["created"] != true ||
		reply["role"] != "assistant" || reply["text"] != "echo: my name is Ana" || body["model"] != "my-model" || body["provider"] != "openrouter" {
		t.Fatalf("%d %v", code, body)
	}
	// Continue it: the model sees the history.
	code, body = api(t, "POST", h.url+"/api/sessions/"+id+"/messages", ownerKey, `{"text":"who am I?"}`, nil)
	if code != 200 || body["created"] != false || body["chat"] != id {
		t.Fatalf("%d %v", code, body)
	}
	if n := len(double.Requests()[1].Body["messages"].([]any)); n != 4 { // system, user, assistant, user
		t.Fatalf("the model got %d messages", n)
	}
	// A client-chosen id is created on its first message.
	if code, body = api(t, "POST", h.url+"/api/sessions/web:console-1/messages", ownerKey, `{"text":"hi"}`, nil); code != 201 || body["chat"] != "web:console-1" {
		t.Fatalf("%d %v", code, body)
	}

	// List: newest first, the same rows as garra_list_chats, channel filter.
	code, body = api(t, "GET", h.url+"/api/sessions", ownerKey, "", nil)
	sessions, _ := body["sessions"].([]any)
	if code != 200 || len(sessions) != 3 {
		t.Fatalf("%d %v", code, body)
	}
	first := sessions[0].(map[string]any)
	second := sessions[1].(map[string]any)
	if first["chat"] != "web:console-1" || second["chat"] != id || second["messages"] != float64(4) || second["channel"] != "web" {
		t.Fatalf("sessions %v", sessions)
	}
	for ch, n := range map[string]int{"web": 2, "telegram": 1} {
		_, body = api(t, "GET", h.url+"/api/sessions?channel="+ch, ownerKey, "", nil)
		if got := len(body["sessions"].([]any)); got != n {
			t.Fatalf("channel %s: %d rows", ch, got)
		}
	}
	if code, _ = api(t, "GET", h.url+"/api/sessions?channel=irc", ownerKey, "", nil); code != 400 {
		t.Fatalf("bad channel: %d", code)
	}

	// Read.
	code, body = api(t, "GET", h.url+"/api/sessions/"+id+"/messages?limit=2", ownerKey, "", nil)
	msgs, _ := body["messages"].([]any)
	if code != 200 || len(msgs) != 2 || msgs[0].(map[string]any)["text"] != "who am I?" || msgs[1].(map[string]any)["role"] != "assistant" {
		t.Fatalf("%d %v", code, body)
	}
	_, body = api(t, "GET", h.url+"/api/sessions/"+id+"/messages", ownerKey, "", nil)
	if got := len(body["messages"].([]any)); got != 4 {
		t.Fatalf("%d messages", got)
	}
	_, body = api(t, "GET", h.url+"/api/sessions/telegram:111/messages", ownerKey, "", nil)
	if !strings.Contains(body["messages"].([]any)[0].(map[string]any)["text"].(string), "sk-ant-api03-") {
		t.Fatal("the owner's own history is returned as stored")
	}
	for path, want := range map[string]int{
		"/api/sessions/web:nope/messages":           404,
		"/api/sessions/" + id + "/messages?limit=0": 400,
		"/api/sessions/" + id + "/messages?limit=x": 400,
	} {
		if code, _ := api(t, "GET", h.url+path, ownerKey, "", nil); code != want {
			t.Errorf("%s: %d, want %d", path, code, want)
		}
	}

	// What POST refuses.
	for name, tc := range map[string]struct {
		path, body string
		hdr        map[string]string
		code       int
		kind       string
	}{
		"telegram conversation": {"/api/sessions/telegram:111/messages", `{"text":"x"}`, nil, 400, "channel_unsupported"},
		"bad id":                {"/api/sessions/web:a%20b/messages", `{"text":"x"}`, nil, 400, "invalid_params"},
		"no channel":            {"/api/sessions/abc/messages", `{"text":"x"}`, nil, 400, "invalid_params"},
		"empty text":            {"/api/sessions/new/messages", `{"text":"   "}`, nil, 400, "invalid_params"},
		"no text":               {"/api/sessions/new/messages", `{}`, nil, 400, "invalid_params"},
		"unknown field":         {"/api/sessions/new/messages", `{"text":"x","role":"assistant"}`, nil, 400, "invalid_params"},
		"two objects":           {"/api/sessions/new/messages", `{"text":"x"}{"text":"y"}`, nil, 400, "invalid_params"},
		"not json":              {"/api/sessions/new/messages", `{"text":"x"}`, map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type"},
		"too large":             {"/api/sessions/new/messages", `{"text":"` + strings.Repeat("a", 70<<10) + `"}`, nil, 413, "too_large"},
	} {
		code, body := api(t, "POST", h.url+tc.path, ownerKey, tc.body, tc.hdr)
		if code != tc.code || body["error"] != tc.kind {
			t.Errorf("%s: %d %v", name, code, body)
		}
	}
	if n := len(double.Requests()); n != 3 {
		t.Fatalf("%d model calls", n)
	}
	if strings.Contains(h.logs.String(), "my name is Ana") || strings.Contains(h.logs.String(), "echo:") {
		t.Fatal("a message reached the log")
	}
}

func TestChatAPIModelFailureKeepsTheQuestion(t *testing.T) {
	double := llmdouble.New(t, llmdouble.Step{Status: 401, ErrorMessage: "bad key corp-123456"})
	store := openStore(t)
	yaml := keyOnly + "    redact_patterns: ['corp-[0-9]{6}']\nllm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
	h := start(t, yaml, map[string]string{"OPENROUTER_API_KEY": "llm-test-key-0123"}, withStore(store))
	code, body := api(t, "POST", h.url+"/api/sessions/new/messages", ownerKey, `{"text":"hello"}`, nil)
	if code != 502 || body["error"] != "provider_error" || strings.Contains(body["message"].(string), "corp-123456") {
		t.Fatalf("%d %v", code, body)
	}
	msgs, err := store.History(context.Background(), body["chat"].(string), 0)
	if err != nil || len(msgs) != 1 || msgs[0].Text != "hello" {
		t.Fatalf("stored %v %v", msgs, err)
	}
}

func TestChatAPIWithoutAStore(t *testing.T) {
	h := start(t, keyOnly, nil) // chat.Empty: nothing to list, nowhere to write
	if code, body := api(t, "GET", h.url+"/api/sessions", ownerKey, "", nil); code != 200 || len(body["sessions"].([]any)) != 0 {
		t.Fatalf("%d %v", code, body)
	}
	if code, body := api(t, "POST", h.url+"/api/sessions/new/messages", ownerKey, `{"text":"x"}`, nil); code != 503 || body["error"] != "unavailable" {
		t.Fatalf("%d %v", code, body)
	}
}
