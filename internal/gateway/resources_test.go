package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/gateway"
	"github.com/garraia/garra/test/fakes/llmdouble"
)

// Callers of the resource tests: the owner, n8n (read tools, scoped to one
// conversation, ask), badgood (status and agent), blind (agent only: no
// read tool at all).
const resourceOrchestrators = `
    orchestrators:
      - name: badgood
        key_env: BADGOOD_KEY
        tools: [status, agent]
      - name: n8n
        key_env: N8N_KEY
        tools: [status, list_chats, read_history, send_message, ask]
        chats: ["telegram:424242424"]
      - name: blind
        key_env: BLIND_KEY
        tools: [agent]
`

const (
	badgoodToken = "badgood-token-123456"
	n8nToken     = "n8n-token-1234567890"
	blindToken   = "blind-token-12345678"
	// secretChat is the conversation the tests grep the audit file for; the
	// digits cannot occur by chance in a 16-hex pseudonym.
	secretChat = "telegram:424242424"
)

var resourceEnv = map[string]string{"BADGOOD_KEY": badgoodToken, "N8N_KEY": n8nToken, "BLIND_KEY": blindToken, "OPENROUTER_API_KEY": "llm-test-key-0123"}

func resourceStore() *memStore {
	return &memStore{
		convs: []chat.Conversation{{ID: secretChat, Channel: "telegram", Messages: 2}, {ID: "web:0b6c", Channel: "web", Messages: 1}},
		msgs: map[string][]chat.Message{
			secretChat: {{Role: "user", Text: "my key is sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}, {Role: "assistant", Text: "noted"}},
			"web:0b6c": {{Role: "user", Text: "hello from the web"}},
		},
	}
}

// startResources serves the resource fixture: agent and ask on, an echo
// LLM double, the store above, and an audit file in a temp dir.
func startResources(t *testing.T, extraMCP, extraTop string, opts ...func(*gateway.Options)) (*harness, *audit.Log) {
	t.Helper()
	double := llmdouble.New(t)
	yaml := enabled + "    allow_agent: true\n    allow_ask: true\n    ask_budget_per_minute: 4\n" + extraMCP + resourceOrchestrators +
		"llm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n" + extraTop
	log := audit.New(audit.Options{Path: filepath.Join(t.TempDir(), "audit", "audit.jsonl")})
	t.Cleanup(func() { _ = log.Close() })
	opts = append([]func(*gateway.Options){func(o *gateway.Options) { o.Store = resourceStore(); o.Audit = log }}, opts...)
	h := start(t, yaml, resourceEnv, opts...)
	return h, log
}

func resourceNames(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.ListResources(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := cs.ListResourceTemplates(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range res.Resources {
		names = append(names, r.URI)
	}
	for _, r := range tpl.ResourceTemplates {
		names = append(names, r.URITemplate)
	}
	return strings.Join(names, " ")
}

// read returns a resource's JSON document.
func read(t *testing.T, cs *mcp.ClientSession, uri string) map[string]any {
	t.Helper()
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		t.Fatalf("read %s: %v", uri, err)
	}
	if len(res.Contents) != 1 || res.Contents[0].MIMEType != "application/json" || res.Contents[0].URI != uri {
		t.Fatalf("read %s: contents %+v", uri, res.Contents)
	}
	if res.CacheScope != "private" {
		t.Errorf("read %s: cacheScope %q, want private", uri, res.CacheScope)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(res.Contents[0].Text), &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

// readErr returns the JSON-RPC error of a read that must fail.
func readErr(t *testing.T, cs *mcp.ClientSession, uri string) *jsonrpc.Error {
	t.Helper()
	_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) {
		t.Fatalf("read %s: err %v, want a JSON-RPC error", uri, err)
	}
	return werr
}

// assertNotFound checks the error is exactly the SDK's own answer to an
// unknown URI: same code, message and data shape.
func assertNotFound(t *testing.T, werr *jsonrpc.Error, uri string) {
	t.Helper()
	var want *jsonrpc.Error
	if !errors.As(mcp.ResourceNotFoundError(uri), &want) {
		t.Fatalf("the SDK's ResourceNotFoundError is no longer a *jsonrpc.Error")
	}
	if werr.Code != want.Code || werr.Code != jsonrpc.CodeInvalidParams || werr.Message != want.Message || string(werr.Data) != string(want.Data) {
		t.Fatalf("error %d %q %s, want %d %q %s", werr.Code, werr.Message, werr.Data, want.Code, want.Message, want.Data)
	}
}

func TestResourcesListPerCaller(t *testing.T) {
	h, _ := startResources(t, "", "")
	for token, want := range map[string]string{
		ownerKey:     "garra://chats garra://policy garra://status garra://chats/{chat}",
		n8nToken:     "garra://chats garra://policy garra://status garra://chats/{chat}",
		badgoodToken: "garra://policy garra://status",
		blindToken:   "garra://policy",
	} {
		if got := resourceNames(t, client(t, h.url, token)); got != want {
			t.Errorf("%s lists %q, want %q", token[:5], got, want)
		}
	}
}

func TestResourceReadsFollowThePolicy(t *testing.T) {
	h, _ := startResources(t, "", "")
	owner, n8n, badgood, blind := client(t, h.url, ownerKey), client(t, h.url, n8nToken), client(t, h.url, badgoodToken), client(t, h.url, blindToken)

	// garra://status is garra_status, byte for byte in its data.
	doc := read(t, owner, "garra://status")
	env, _ := call(t, owner, "garra_status", nil)
	delete(doc["data"].(map[string]any), "uptime_secs")
	delete(env["data"].(map[string]any), "uptime_secs")
	if b1, _ := json.Marshal(doc); string(b1) != mustJSON(t, env) {
		t.Fatalf("status resource %s\n!= tool %s", b1, mustJSON(t, env))
	}

	// The owner lists both conversations, each with its template URI, and
	// reads one through that URI: redacted.
	rows := read(t, owner, "garra://chats")["data"].(map[string]any)["chats"].([]any)
	if len(rows) != 2 || rows[0].(map[string]any)["uri"] != "garra://chats/telegram%3A424242424" {
		t.Fatalf("owner chats %v", rows)
	}
	hist := read(t, owner, rows[0].(map[string]any)["uri"].(string))
	d := hist["data"].(map[string]any)
	if hist["tool"] != "garra_read_history" || d["redacted"] != true || len(d["messages"].([]any)) != 2 || strings.Contains(mustJSON(t, d), "AAAAAAAAAAAA") {
		t.Fatalf("history %v", hist)
	}

	// n8n is scoped to one conversation: it lists only that one and reads
	// the other exactly as if it did not exist.
	rows = read(t, n8n, "garra://chats")["data"].(map[string]any)["chats"].([]any)
	if len(rows) != 1 || rows[0].(map[string]any)["chat"] != secretChat {
		t.Fatalf("n8n chats %v", rows)
	}
	read(t, n8n, "garra://chats/telegram%3A424242424")
	outOfScope := "garra://chats/web%3A0b6c"
	assertNotFound(t, readErr(t, n8n, outOfScope), outOfScope)
	missing := "garra://chats/telegram%3A999"
	assertNotFound(t, readErr(t, n8n, missing), missing)
	unknown := "garra://nothing-here"
	assertNotFound(t, readErr(t, n8n, unknown), unknown)
	// An unencoded id does not match the template: not found as well.
	assertNotFound(t, readErr(t, owner, "garra://chats/"+secretChat), "garra://chats/"+secretChat)

	// Callers without the read tools read nothing, identically.
	for _, cs := range []*mcp.ClientSession{badgood, blind} {
		for _, uri := range []string{"garra://chats", "garra://chats/telegram%3A424242424"} {
			assertNotFound(t, readErr(t, cs, uri), uri)
		}
	}
	assertNotFound(t, readErr(t, blind, "garra://status"), "garra://status")
	if read(t, badgood, "garra://status")["tool"] != "garra_status" {
		t.Fatal("badgood may call garra_status, so it may read garra://status")
	}
}

func TestPolicyResourceIsTheCallersOwn(t *testing.T) {
	h, _ := startResources(t, "", "")
	n8n := client(t, h.url, n8nToken)
	if env, _ := call(t, n8n, "garra_ask", map[string]any{"message": "ping"}); env["ok"] != true {
		t.Fatalf("ask %v", env)
	}
	p := read(t, n8n, "garra://policy")
	want := `{"allowed_models":["z-ai/glm-5.3-flash"],"budgets":{"ask":{"per_minute":4,"remaining":3}},` +
		`"caller":"n8n","chat_scope":{"all":false,"chats":["telegram:424242424"]},"max_history_messages":50,"owner":false,` +
		`"resources":["garra://status","garra://policy","garra://chats","garra://chats/{chat}"],"schema":"garra.policy.v1","surface":"http",` +
		`"tools":["garra_status","garra_list_chats","garra_read_history","garra_ask"]}`
	if got := mustJSON(t, p); got != want {
		t.Fatalf("n8n policy\n got %s\nwant %s", got, want)
	}

	bg := read(t, client(t, h.url, badgoodToken), "garra://policy")
	if bg["agent_max_seconds"] != float64(300) || mustJSON(t, bg["budgets"]) != `{"agent":{"per_minute":2,"remaining":2}}` ||
		bg["chat_scope"] != nil || bg["max_history_messages"] != nil {
		t.Fatalf("badgood policy %v", bg)
	}
	owner := read(t, client(t, h.url, ownerKey), "garra://policy")
	if owner["owner"] != true || mustJSON(t, owner["chat_scope"]) != `{"all":true}` {
		t.Fatalf("owner policy %v", owner)
	}
	// Never another caller's: no other name, no other scope, no token.
	for who, doc := range map[string]map[string]any{"n8n": p, "badgood": bg, "owner": owner} {
		s := mustJSON(t, doc)
		for _, other := range []string{"badgood", "n8n", "blind", "BADGOOD_KEY", n8nToken, ownerKey} {
			if other != who && strings.Contains(s, other) {
				t.Errorf("%s's policy mentions %q: %s", who, other, s)
			}
		}
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func promptNames(t *testing.T, cs *mcp.ClientSession) string {
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

func getPrompt(cs *mcp.ClientSession, name string, args map[string]string) (string, error) {
	res, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return "", err
	}
	return res.Messages[0].Content.(*mcp.TextContent).Text, nil
}

func wantInvalid(t *testing.T, err error, prefix string) {
	t.Helper()
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || !strings.HasPrefix(werr.Message, prefix) {
		t.Fatalf("err %v, want -32602 starting %q", err, prefix)
	}
}

func TestPrompts(t *testing.T) {
	h, _ := startResources(t, "", "")
	owner, badgood, n8n := client(t, h.url, ownerKey), client(t, h.url, badgoodToken), client(t, h.url, n8nToken)
	if got := promptNames(t, owner); got != "diagnose_gateway onboard_orchestrator" {
		t.Fatalf("owner prompts %q", got)
	}
	if got := promptNames(t, badgood); got != "delegate_task diagnose_gateway onboard_orchestrator" {
		t.Fatalf("badgood prompts %q", got)
	}

	text, err := getPrompt(owner, "onboard_orchestrator", map[string]string{"name": "team-b", "tools": "status, read_history"})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"- name: team-b", "tools: [status, read_history]", `"url": "` + "http://127.0.0.1:3888/mcp" + `"`, `"Authorization": "Bearer ${TEAM_B_MCP_KEY}"`} {
		if !strings.Contains(text, want) {
			t.Errorf("onboarding lacks %q:\n%s", want, text)
		}
	}
	_, err = getPrompt(owner, "onboard_orchestrator", map[string]string{"name": "Team_B"})
	wantInvalid(t, err, "name: ")
	_, err = getPrompt(owner, "onboard_orchestrator", map[string]string{"name": "team-b", "tools": "status, root"})
	wantInvalid(t, err, "tools: ")

	// diagnose_gateway follows what the caller can call.
	text, err = getPrompt(badgood, "diagnose_gateway", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "Call garra_status") || !strings.Contains(text, "garra_pair_status is not available") || strings.Contains(text, "Call garra_list_chats") {
		t.Fatalf("badgood diagnosis:\n%s", text)
	}
	text, _ = getPrompt(n8n, "diagnose_gateway", nil)
	if !strings.Contains(text, "Call garra_list_chats") || !strings.Contains(text, "garra://policy") {
		t.Fatalf("n8n diagnosis:\n%s", text)
	}
	_, err = getPrompt(owner, "diagnose_gateway", map[string]string{"verbose": "1"})
	wantInvalid(t, err, "verbose: ")

	// delegate_task: bounded by agent_max_seconds, and only for callers
	// that can call garra_agent.
	text, err = getPrompt(badgood, "delegate_task", map[string]string{"goal": "List the TODOs in docs/.", "timeout": "120"})
	if err != nil || !strings.Contains(text, `"name": "garra_agent"`) || !strings.Contains(text, `"timeout_secs": 120`) {
		t.Fatalf("delegate: %v\n%s", err, text)
	}
	_, err = getPrompt(badgood, "delegate_task", map[string]string{"goal": "x", "timeout": "301"})
	wantInvalid(t, err, "timeout: ")
	_, err = getPrompt(badgood, "delegate_task", map[string]string{})
	wantInvalid(t, err, "goal: ")
	_, err = getPrompt(owner, "delegate_task", map[string]string{"goal": "x"})
	wantInvalid(t, err, `unknown prompt "delegate_task"`)
}

// auditLines reads the audit file.
func auditLines(t *testing.T, path string) (string, []map[string]any) {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		out = append(out, m)
	}
	return string(raw), out
}

// find returns the lines matching every key=value of want.
func find(lines []map[string]any, want map[string]any) []map[string]any {
	var out []map[string]any
	for _, l := range lines {
		ok := true
		for k, v := range want {
			if k == "kind" {
				e, _ := l["error"].(map[string]any)
				if e["kind"] != v {
					ok = false
				}
				continue
			}
			if l[k] != v {
				ok = false
			}
		}
		if ok {
			out = append(out, l)
		}
	}
	return out
}

func TestAuditFileRecordsCallsReadsAndRefusals(t *testing.T) {
	sender := &fakeSender{}
	h, log := startResources(t, "    allow_send: true\n", "channels: {telegram: {proactive_chat_ids: ['424242424']}}\n",
		func(o *gateway.Options) { o.Sender = sender })
	owner, n8n, badgood := client(t, h.url, ownerKey), client(t, h.url, n8nToken), client(t, h.url, badgoodToken)

	call(t, owner, "garra_status", nil)
	call(t, owner, "garra_read_history", map[string]any{"chat": secretChat})
	read(t, owner, "garra://chats/telegram%3A424242424")
	if env, _ := call(t, n8n, "garra_read_history", map[string]any{"chat": "web:0b6c"}); kindOf(env) != "not_found" {
		t.Fatalf("out of scope read %v", env)
	}
	if env, _ := call(t, n8n, "garra_send_message", map[string]any{"chat_id": "424242424", "text": "the launch code is 8812-ZULU"}); env["ok"] != true {
		t.Fatalf("send %v", env)
	}
	readErr(t, n8n, "garra://chats/web%3A0b6c")
	if env, _ := call(t, n8n, "garra_ask", map[string]any{"message": "what is the secret plan QX-7781?"}); env["ok"] != true {
		t.Fatalf("ask %v", env)
	}
	call(t, badgood, "garra_list_chats", nil)
	readErr(t, badgood, "garra://chats")
	readErr(t, badgood, "garra://secret/424242424")
	if _, err := badgood.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_nope"}); err == nil {
		t.Fatal("unknown tool accepted")
	}
	if code, _ := post(t, h.url, "not-a-token-at-all", toolsList, nil); code != 401 {
		t.Fatalf("wrong bearer: %d", code)
	}
	if code, _ := post(t, h.url, ownerKey, toolsList, map[string]string{"Accept": "application/json"}); code != 406 {
		t.Fatalf("Accept: %d", code)
	}

	raw, lines := auditLines(t, log.Path())
	// Never a token, a prompt, an answer, a tool's output or a chat id.
	for _, secret := range []string{ownerKey, n8nToken, badgoodToken, "not-a-token-at-all", "424242424", "0b6c", "launch code", "8812",
		"QX-7781", "secret plan", "sk-ant", "noted", "hello from the web", "garra_nope"} {
		if strings.Contains(raw, secret) {
			t.Errorf("audit file contains %q:\n%s", secret, raw)
		}
	}
	p := log.Pseudonym
	for _, tt := range []struct {
		name string
		want map[string]any
	}{
		{"a call", map[string]any{"caller": "owner", "tool": "garra_status", "outcome": "ok"}},
		{"a read history call, pseudonymized", map[string]any{"caller": "owner", "tool": "garra_read_history", "outcome": "ok", "target": p(secretChat)}},
		{"a resource read, pseudonymized", map[string]any{"caller": "owner", "resource": "garra://chats/{chat}", "outcome": "ok", "target": p(secretChat)}},
		{"an out-of-scope call", map[string]any{"caller": "n8n", "tool": "garra_read_history", "outcome": "refused", "kind": "not_found", "target": p("web:0b6c")}},
		{"a send, same pseudonym as the reads", map[string]any{"caller": "n8n", "tool": "garra_send_message", "outcome": "ok", "target": p(secretChat)}},
		{"an out-of-scope read", map[string]any{"caller": "n8n", "resource": "garra://chats/{chat}", "outcome": "refused", "kind": "not_found", "target": p("web:0b6c")}},
		{"an ask, with provider and model", map[string]any{"caller": "n8n", "tool": "garra_ask", "outcome": "ok", "provider": "openrouter", "model": "z-ai/glm-5.3-flash"}},
		{"a tool refusal", map[string]any{"caller": "badgood", "tool": "garra_list_chats", "outcome": "refused", "kind": "tool_not_allowed"}},
		{"a resource refusal", map[string]any{"caller": "badgood", "resource": "garra://chats", "outcome": "refused", "kind": "tool_not_allowed"}},
		{"an unknown resource", map[string]any{"caller": "badgood", "resource": "unknown", "outcome": "not_found", "target": p("garra://secret/424242424")}},
		{"an unknown tool", map[string]any{"caller": "badgood", "tool": "unknown", "outcome": "not_found", "target": p("garra_nope")}},
		{"a 401", map[string]any{"caller": "", "outcome": "refused", "kind": "unauthorized"}},
		{"a 406", map[string]any{"caller": "", "outcome": "refused", "kind": "not_acceptable"}},
	} {
		got := find(lines, tt.want)
		if len(got) != 1 {
			t.Errorf("%s: %d lines match %v", tt.name, len(got), tt.want)
		}
	}
	for _, l := range lines {
		ts, _ := l["timestamp"].(string)
		if l["surface"] != "http" || !strings.HasSuffix(ts, "Z") || l["latency_ms"] == nil {
			t.Errorf("line %v", l)
		}
	}
	if fi, err := os.Stat(log.Path()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("audit file mode: %v %v", fi, err)
	}
	// The stderr audit line stays.
	if !strings.Contains(h.logs.String(), "mcp call") || !strings.Contains(h.logs.String(), "mcp resource read") {
		t.Fatal("stderr audit lines missing")
	}
}

func TestBrokenAuditFileDoesNotBreakCalls(t *testing.T) {
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	log := audit.New(audit.Options{Path: filepath.Join(blocker, "audit.jsonl"), Logger: slog.New(slog.NewTextHandler(logs, nil))})
	h := start(t, enabled, nil, func(o *gateway.Options) { o.Audit = log })
	cs := client(t, h.url, ownerKey)
	for range 3 {
		if env, isErr := call(t, cs, "garra_status", nil); isErr || env["ok"] != true {
			t.Fatalf("call failed with a broken audit file: %v", env)
		}
	}
	read(t, cs, "garra://policy")
	if n := strings.Count(logs.String(), "audit file not written"); n != 1 {
		t.Fatalf("%d audit errors logged, want 1:\n%s", n, logs.String())
	}
}

// The bounds a tool's schema shows are the bounds its call enforces: one
// past each is refused with -32602 naming the argument, and nothing is
// sent.
func TestSchemaBoundsAreEnforced(t *testing.T) {
	sender := &fakeSender{}
	h, _ := startResources(t, "    allow_send: true\n", "channels: {telegram: {proactive_chat_ids: ['424242424']}}\n",
		func(o *gateway.Options) { o.Sender = sender })
	owner := client(t, h.url, ownerKey)
	maxLen := func(tool, prop string) int {
		res, err := owner.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tl := range res.Tools {
			if tl.Name != tool {
				continue
			}
			raw, _ := json.Marshal(tl.InputSchema)
			var s struct {
				Properties map[string]struct {
					MaxLength int `json:"maxLength"`
				} `json:"properties"`
			}
			if err := json.Unmarshal(raw, &s); err != nil || s.Properties[prop].MaxLength == 0 {
				t.Fatalf("%s.%s has no maxLength: %s", tool, prop, raw)
			}
			return s.Properties[prop].MaxLength
		}
		t.Fatalf("%s not listed", tool)
		return 0
	}
	for _, tc := range []struct {
		tool, prop string
		args       func(over string) map[string]any
	}{
		{"garra_send_message", "chat_id", func(over string) map[string]any { return map[string]any{"chat_id": over, "text": "hi"} }},
		{"garra_send_message", "text", func(over string) map[string]any { return map[string]any{"chat_id": "424242424", "text": over} }},
		{"garra_read_history", "chat", func(over string) map[string]any { return map[string]any{"chat": over} }},
	} {
		over := strings.Repeat("9", maxLen(tc.tool, tc.prop)+1)
		_, err := owner.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args(over)})
		wantInvalid(t, err, tc.prop+": at most")
	}
	sender.mu.Lock()
	defer sender.mu.Unlock()
	if len(sender.sent) != 0 {
		t.Fatalf("%d messages sent past the bounds", len(sender.sent))
	}
}
