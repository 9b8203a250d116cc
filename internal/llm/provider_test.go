package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/garraia/garra/internal/llm"
	"github.com/garraia/garra/test/fakes/llmdouble"
)

// family describes how one provider kind reaches the double.
type family struct {
	kind llm.Kind
	// base is the BaseURL to configure and path the request path it yields.
	base func(*llmdouble.Server) string
	path string
}

var families = []family{
	{llm.KindOpenAI, func(s *llmdouble.Server) string { return s.URL() + "/v1" }, "/v1/chat/completions"},
	{llm.KindOpenRouter, func(s *llmdouble.Server) string { return s.URL() + "/api/v1" }, "/api/v1/chat/completions"},
	{llm.KindOllama, func(s *llmdouble.Server) string { return s.URL() + "/v1" }, "/v1/chat/completions"},
	{llm.KindAnthropic, func(s *llmdouble.Server) string { return s.URL() }, "/v1/messages"},
}

const testKey = "sk-test-0123456789abcdef"

func newProvider(t *testing.T, kind llm.Kind, base, key string) llm.Provider {
	t.Helper()
	p, err := llm.New(llm.Options{Kind: kind, BaseURL: base, APIKey: key, MaxRetries: 0})
	if err != nil {
		t.Fatalf("New(%s): %v", kind, err)
	}
	if p.Kind() != kind {
		t.Fatalf("Kind() = %s, want %s", p.Kind(), kind)
	}
	return p
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func onlyRequest(t *testing.T, s *llmdouble.Server) llmdouble.Recorded {
	t.Helper()
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("double saw %d requests, want 1", len(reqs))
	}
	return reqs[0]
}

func isOpenAIWire(k llm.Kind) bool { return k != llm.KindAnthropic }

func TestTextAnswer(t *testing.T) {
	for _, f := range families {
		t.Run(string(f.kind), func(t *testing.T) {
			t.Parallel()
			s := llmdouble.New(t, llmdouble.Step{Text: "hello there"})
			p := newProvider(t, f.kind, f.base(s), testKey)
			resp, err := p.Complete(testCtx(t), llm.Request{
				Model:    "model-x",
				System:   "be brief",
				Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}},
			})
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if resp.Text != "hello there" || len(resp.ToolCalls) != 0 {
				t.Fatalf("response = %+v", resp)
			}
			rec := onlyRequest(t, s)
			if rec.Path != f.path {
				t.Errorf("path = %q, want %q", rec.Path, f.path)
			}
			if rec.Model != "model-x" {
				t.Errorf("model = %q", rec.Model)
			}
			if rec.MaxTokens != llm.DefaultMaxTokens {
				t.Errorf("max tokens = %d, want %d", rec.MaxTokens, llm.DefaultMaxTokens)
			}
			// OpenAI's reasoning models reject max_tokens; the others
			// document it.
			wantField := "max_tokens"
			if f.kind == llm.KindOpenAI {
				wantField = "max_completion_tokens"
			}
			if got, _ := rec.Body[wantField].(float64); got != llm.DefaultMaxTokens {
				t.Errorf("%s = %v in body %s", wantField, rec.Body[wantField], rec.RawBody)
			}
			if rec.System != "be brief" || rec.LastUserText != "hi" {
				t.Errorf("system = %q, last user = %q", rec.System, rec.LastUserText)
			}
			if f.kind == llm.KindAnthropic {
				if _, ok := rec.Body["system"]; !ok {
					t.Errorf("anthropic system prompt not in top-level system: %s", rec.RawBody)
				}
				if got := rec.Header.Get("X-Api-Key"); got != testKey {
					t.Errorf("x-api-key = %q", got)
				}
				if got := rec.Header.Get("Authorization"); got != "" {
					t.Errorf("unexpected Authorization header %q", got)
				}
				if rec.Header.Get("Anthropic-Version") == "" {
					t.Errorf("no anthropic-version header")
				}
			} else {
				if got := rec.Header.Get("Authorization"); got != "Bearer "+testKey {
					t.Errorf("Authorization = %q", got)
				}
				if got := rec.Header.Get("X-Api-Key"); got != "" {
					t.Errorf("unexpected x-api-key %q", got)
				}
			}
		})
	}
}

func TestMaxTokensOverride(t *testing.T) {
	for _, f := range families {
		t.Run(string(f.kind), func(t *testing.T) {
			t.Parallel()
			s := llmdouble.New(t)
			p := newProvider(t, f.kind, f.base(s), testKey)
			resp, err := p.Complete(testCtx(t), llm.Request{
				Model:     "m",
				MaxTokens: 123,
				Messages:  []llm.Message{{Role: llm.RoleUser, Content: "ping"}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "echo: ping" {
				t.Errorf("text = %q", resp.Text)
			}
			if got := onlyRequest(t, s).MaxTokens; got != 123 {
				t.Errorf("max tokens = %d, want 123", got)
			}
		})
	}
}

var readFileSchema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)

func TestToolRoundTrip(t *testing.T) {
	for _, f := range families {
		t.Run(string(f.kind), func(t *testing.T) {
			t.Parallel()
			s := llmdouble.New(t,
				llmdouble.Step{Text: "let me look", ToolCalls: []llmdouble.Call{
					{Name: "read_file", Args: `{"path":"a.txt"}`},
					{Name: "list_dir", Args: ""},
				}},
				llmdouble.Step{Text: "done"},
			)
			p := newProvider(t, f.kind, f.base(s), testKey)
			tools := []llm.ToolDef{
				{Name: "read_file", Description: "Read a file", Parameters: readFileSchema},
				{Name: "list_dir", Description: "List the directory"},
			}
			history := []llm.Message{{Role: llm.RoleUser, Content: "what is in a.txt?"}}
			ctx := testCtx(t)

			resp, err := p.Complete(ctx, llm.Request{Model: "m", System: "sys", Messages: history, Tools: tools})
			if err != nil {
				t.Fatalf("turn 1: %v", err)
			}
			if len(resp.ToolCalls) != 2 {
				t.Fatalf("tool calls = %+v", resp.ToolCalls)
			}
			c0, c1 := resp.ToolCalls[0], resp.ToolCalls[1]
			if c0.Name != "read_file" || c1.Name != "list_dir" || c0.ID == "" || c1.ID == "" || c0.ID == c1.ID {
				t.Fatalf("tool calls = %+v", resp.ToolCalls)
			}
			assertJSON(t, c0.Arguments, `{"path":"a.txt"}`)
			assertJSON(t, c1.Arguments, `{}`)
			if resp.Text != "let me look" {
				t.Errorf("text alongside tool calls = %q", resp.Text)
			}

			rec1 := s.Requests()[0]
			if !reflect.DeepEqual(rec1.ToolNames, []string{"read_file", "list_dir"}) {
				t.Errorf("tool names = %v", rec1.ToolNames)
			}
			tool0 := asMap(t, asSlice(t, rec1.Body["tools"])[0])
			var schema map[string]any
			if isOpenAIWire(f.kind) {
				if tool0["type"] != "function" {
					t.Errorf("tool type = %v", tool0["type"])
				}
				fn := asMap(t, tool0["function"])
				if fn["description"] != "Read a file" {
					t.Errorf("description = %v", fn["description"])
				}
				schema = asMap(t, fn["parameters"])
			} else {
				if tool0["description"] != "Read a file" {
					t.Errorf("description = %v", tool0["description"])
				}
				schema = asMap(t, tool0["input_schema"])
			}
			assertJSON(t, mustJSON(t, schema), string(readFileSchema))

			history = append(history,
				llm.Message{Role: llm.RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls},
				llm.Message{Role: llm.RoleTool, ToolCallID: c0.ID, Content: "file body"},
				llm.Message{Role: llm.RoleTool, ToolCallID: c1.ID, Content: "boom", IsError: true},
			)
			resp, err = p.Complete(ctx, llm.Request{Model: "m", System: "sys", Messages: history, Tools: tools})
			if err != nil {
				t.Fatalf("turn 2: %v", err)
			}
			if resp.Text != "done" || len(resp.ToolCalls) != 0 {
				t.Fatalf("turn 2 response = %+v", resp)
			}
			reqs := s.Requests()
			if len(reqs) != 2 {
				t.Fatalf("requests = %d", len(reqs))
			}
			msgs := asSlice(t, reqs[1].Body["messages"])
			if isOpenAIWire(f.kind) {
				checkOpenAIHistory(t, msgs, c0.ID, c1.ID)
			} else {
				checkAnthropicHistory(t, msgs, c0.ID, c1.ID)
			}
		})
	}
}

func checkOpenAIHistory(t *testing.T, msgs []any, id0, id1 string) {
	t.Helper()
	// system, user, assistant(tool_calls), tool, tool
	if len(msgs) != 5 {
		t.Fatalf("messages = %s", mustJSON(t, msgs))
	}
	roles := []string{"system", "user", "assistant", "tool", "tool"}
	for i, r := range roles {
		if got := asMap(t, msgs[i])["role"]; got != r {
			t.Errorf("message %d role = %v, want %s", i, got, r)
		}
	}
	asst := asMap(t, msgs[2])
	calls := asSlice(t, asst["tool_calls"])
	if len(calls) != 2 {
		t.Fatalf("assistant tool_calls = %s", mustJSON(t, asst))
	}
	call0 := asMap(t, calls[0])
	fn0 := asMap(t, call0["function"])
	if call0["id"] != id0 || call0["type"] != "function" || fn0["name"] != "read_file" {
		t.Errorf("assistant tool call 0 = %s", mustJSON(t, call0))
	}
	args, ok := fn0["arguments"].(string)
	if !ok {
		t.Fatalf("arguments must be a JSON string, got %T", fn0["arguments"])
	}
	assertJSON(t, json.RawMessage(args), `{"path":"a.txt"}`)
	if fn1 := asMap(t, asMap(t, calls[1])["function"]); fn1["arguments"] != "{}" {
		t.Errorf("empty arguments replayed as %v", fn1["arguments"])
	}
	t0, t1 := asMap(t, msgs[3]), asMap(t, msgs[4])
	if t0["tool_call_id"] != id0 || t0["content"] != "file body" {
		t.Errorf("tool message 0 = %s", mustJSON(t, t0))
	}
	if t1["tool_call_id"] != id1 || !strings.Contains(t1["content"].(string), "boom") {
		t.Errorf("tool message 1 = %s", mustJSON(t, t1))
	}
}

func checkAnthropicHistory(t *testing.T, msgs []any, id0, id1 string) {
	t.Helper()
	// user, assistant(text, tool_use, tool_use), user(tool_result, tool_result)
	if len(msgs) != 3 {
		t.Fatalf("messages = %s", mustJSON(t, msgs))
	}
	asst := asMap(t, msgs[1])
	if asst["role"] != "assistant" {
		t.Fatalf("message 1 = %s", mustJSON(t, asst))
	}
	blocks := asSlice(t, asst["content"])
	if len(blocks) != 3 {
		t.Fatalf("assistant content = %s", mustJSON(t, blocks))
	}
	if b := asMap(t, blocks[0]); b["type"] != "text" || b["text"] != "let me look" {
		t.Errorf("assistant block 0 = %s", mustJSON(t, b))
	}
	use := asMap(t, blocks[1])
	if use["type"] != "tool_use" || use["id"] != id0 || use["name"] != "read_file" {
		t.Errorf("tool_use = %s", mustJSON(t, use))
	}
	assertJSON(t, mustJSON(t, use["input"]), `{"path":"a.txt"}`)
	assertJSON(t, mustJSON(t, asMap(t, blocks[2])["input"]), `{}`)

	results := asMap(t, msgs[2])
	if results["role"] != "user" {
		t.Fatalf("message 2 = %s", mustJSON(t, results))
	}
	rb := asSlice(t, results["content"])
	if len(rb) != 2 {
		t.Fatalf("tool results must share one user message: %s", mustJSON(t, rb))
	}
	r0, r1 := asMap(t, rb[0]), asMap(t, rb[1])
	if r0["type"] != "tool_result" || r0["tool_use_id"] != id0 || r0["is_error"] == true {
		t.Errorf("tool_result 0 = %s", mustJSON(t, r0))
	}
	if !strings.Contains(string(mustJSON(t, r0["content"])), "file body") {
		t.Errorf("tool_result 0 content = %s", mustJSON(t, r0["content"]))
	}
	if r1["type"] != "tool_result" || r1["tool_use_id"] != id1 || r1["is_error"] != true {
		t.Errorf("tool_result 1 = %s", mustJSON(t, r1))
	}
}

func TestBaseURLOverride(t *testing.T) {
	for _, f := range families {
		t.Run(string(f.kind), func(t *testing.T) {
			t.Parallel()
			s := llmdouble.New(t, llmdouble.Step{Text: "ok"})
			base, want := s.URL()+"/proxy/v1", "/proxy/v1/chat/completions"
			if f.kind == llm.KindAnthropic {
				base, want = s.URL()+"/proxy", "/proxy/v1/messages"
			}
			p := newProvider(t, f.kind, base, testKey)
			if _, err := p.Complete(testCtx(t), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}); err != nil {
				t.Fatal(err)
			}
			if got := onlyRequest(t, s).Path; got != want {
				t.Errorf("path = %q, want %q", got, want)
			}
		})
	}
}

func TestDefaultBaseURL(t *testing.T) {
	want := map[llm.Kind]string{
		llm.KindOpenAI:     "https://api.openai.com/v1",
		llm.KindOpenRouter: "https://openrouter.ai/api/v1",
		llm.KindOllama:     "http://localhost:11434/v1",
		llm.KindAnthropic:  "https://api.anthropic.com",
	}
	for k, u := range want {
		if got := llm.DefaultBaseURL(k); got != u {
			t.Errorf("DefaultBaseURL(%s) = %q, want %q", k, got, u)
		}
	}
	if got := llm.DefaultBaseURL("nope"); got != "" {
		t.Errorf("DefaultBaseURL(nope) = %q", got)
	}
}

func TestHTTPErrors(t *testing.T) {
	for _, f := range families {
		for _, status := range []int{401, 429, 500} {
			t.Run(string(f.kind)+"/"+http.StatusText(status), func(t *testing.T) {
				t.Parallel()
				msg := "remote says " + http.StatusText(status)
				s := llmdouble.New(t, llmdouble.Step{Status: status, ErrorMessage: msg})
				p := newProvider(t, f.kind, f.base(s), testKey)
				_, err := p.Complete(testCtx(t), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
				pe := asProviderError(t, err)
				if pe.Kind != f.kind || pe.StatusCode != status || pe.Message != msg {
					t.Errorf("ProviderError = %+v, want kind %s status %d message %q", pe, f.kind, status, msg)
				}
				if strings.Contains(err.Error(), testKey) {
					t.Errorf("error leaks the API key: %v", err)
				}
				if len(s.Requests()) != 1 {
					t.Errorf("MaxRetries 0 must make one attempt, saw %d", len(s.Requests()))
				}
			})
		}
	}
}

func TestMalformedJSON(t *testing.T) {
	for _, f := range families {
		t.Run(string(f.kind), func(t *testing.T) {
			t.Parallel()
			s := llmdouble.New(t, llmdouble.Step{Malformed: true})
			p := newProvider(t, f.kind, f.base(s), testKey)
			_, err := p.Complete(testCtx(t), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
			pe := asProviderError(t, err)
			if pe.Kind != f.kind || pe.Message == "" {
				t.Errorf("ProviderError = %+v", pe)
			}
			if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
				t.Errorf("malformed body reported as a context error: %v", err)
			}
		})
	}
}

// Bodies the double does not produce: a proxy's HTML page and OpenRouter's
// numeric error code.
func TestOddErrorBodies(t *testing.T) {
	cases := []struct {
		name, ctype, body string
		status            int
		want              string
	}{
		{"html", "text/html", "<html><body>502 Bad Gateway</body></html>", 502, "<html><body>502 Bad Gateway</body></html>"},
		{"numeric code", "application/json", `{"error":{"message":"No auth credentials found","code":401}}`, 401, "No auth credentials found"},
		{"string error", "application/json", `{"error":"bad key"}`, 403, `{"error":"bad key"}`},
		{"huge", "text/plain", strings.Repeat("x", 5000), 500, strings.Repeat("x", 500) + "…"},
	}
	for _, c := range cases {
		for _, kind := range []llm.Kind{llm.KindOpenRouter, llm.KindAnthropic} {
			t.Run(c.name+"/"+string(kind), func(t *testing.T) {
				t.Parallel()
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
					w.Header().Set("Content-Type", c.ctype)
					w.WriteHeader(c.status)
					_, _ = w.Write([]byte(c.body))
				}))
				t.Cleanup(srv.Close)
				p := newProvider(t, kind, srv.URL, testKey)
				_, err := p.Complete(testCtx(t), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
				pe := asProviderError(t, err)
				if pe.StatusCode != c.status {
					t.Errorf("status = %d, want %d (%v)", pe.StatusCode, c.status, err)
				}
				if pe.Message != c.want {
					t.Errorf("message = %q, want %q", pe.Message, c.want)
				}
			})
		}
	}
}

func TestDeadline(t *testing.T) {
	for _, f := range families {
		t.Run(string(f.kind), func(t *testing.T) {
			t.Parallel()
			s := llmdouble.New(t, llmdouble.Step{Text: "too late", Delay: 5 * time.Second})
			p := newProvider(t, f.kind, f.base(s), testKey)
			ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := p.Complete(ctx, llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want DeadlineExceeded", err)
			}
			if !strings.Contains(err.Error(), string(f.kind)) {
				t.Errorf("error does not name the provider: %v", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("returned after %v", d)
			}
		})
	}
}

func TestCanceled(t *testing.T) {
	s := llmdouble.New(t, llmdouble.Step{Text: "too late", Delay: 5 * time.Second})
	p := newProvider(t, llm.KindAnthropic, s.URL(), testKey)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := p.Complete(ctx, llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want Canceled", err)
	}
}

func TestMissingKey(t *testing.T) {
	for _, k := range []llm.Kind{llm.KindOpenAI, llm.KindOpenRouter, llm.KindAnthropic} {
		_, err := llm.New(llm.Options{Kind: k})
		if err == nil || err.Error() != "no API key for provider "+string(k) {
			t.Errorf("New(%s) without key: err = %v", k, err)
		}
	}

	s := llmdouble.New(t, llmdouble.Step{Text: "local"})
	p, err := llm.New(llm.Options{Kind: llm.KindOllama, BaseURL: s.URL() + "/v1"})
	if err != nil {
		t.Fatalf("ollama without key: %v", err)
	}
	resp, err := p.Complete(testCtx(t), llm.Request{Model: "llama", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
	if err != nil || resp.Text != "local" {
		t.Fatalf("ollama: resp %+v, err %v", resp, err)
	}
	if got := onlyRequest(t, s).Header.Get("Authorization"); got != "" {
		t.Errorf("ollama without key sent Authorization %q", got)
	}
}

// Ambient SDK environment variables must not reach any client: the caller
// chose the key and endpoint.
func TestEnvironmentIgnored(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-env-openai")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	t.Setenv("OPENAI_PROJECT_ID", "proj-env")
	t.Setenv("ANTHROPIC_API_KEY", "sk-env-anthropic")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "tok-env-anthropic")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")

	s := llmdouble.New(t)
	for _, o := range []llm.Options{
		{Kind: llm.KindOllama, BaseURL: s.URL() + "/v1"},
		{Kind: llm.KindOpenRouter, BaseURL: s.URL() + "/api/v1", APIKey: testKey},
		{Kind: llm.KindAnthropic, BaseURL: s.URL(), APIKey: testKey},
	} {
		p, err := llm.New(o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Complete(testCtx(t), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}); err != nil {
			t.Fatalf("%s: %v", o.Kind, err)
		}
	}
	reqs := s.Requests()
	if len(reqs) != 3 {
		t.Fatalf("requests = %d", len(reqs))
	}
	for i, want := range []string{"", testKey, testKey} {
		h := reqs[i].Header
		if got := reqs[i].APIKey(); got != want {
			t.Errorf("request %d credential = %q, want %q", i, got, want)
		}
		for _, name := range []string{"OpenAI-Organization", "OpenAI-Project"} {
			if v := h.Get(name); v != "" {
				t.Errorf("request %d carries %s: %q", i, name, v)
			}
		}
	}
}

func TestNewRejects(t *testing.T) {
	bad := []llm.Options{
		{Kind: "gemini", APIKey: "k"},
		{Kind: llm.KindOpenAI, APIKey: "k", BaseURL: "api.openai.com/v1"},
		{Kind: llm.KindOpenAI, APIKey: "k", BaseURL: "ftp://x"},
		{Kind: llm.KindOpenAI, APIKey: "k", MaxRetries: -1},
	}
	for _, o := range bad {
		if _, err := llm.New(o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
}

func TestHTTPClientUsed(t *testing.T) {
	s := llmdouble.New(t)
	for _, f := range families {
		var hits int
		client := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			hits++
			return http.DefaultTransport.RoundTrip(r)
		})}
		p, err := llm.New(llm.Options{Kind: f.kind, BaseURL: f.base(s), APIKey: testKey, HTTPClient: client})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Complete(testCtx(t), llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}); err != nil {
			t.Fatalf("%s: %v", f.kind, err)
		}
		if hits != 1 {
			t.Errorf("%s: custom HTTP client used %d times", f.kind, hits)
		}
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func asProviderError(t *testing.T, err error) *llm.ProviderError {
	t.Helper()
	var pe *llm.ProviderError
	if !errors.As(err, &pe) {
		t.Fatalf("err = %v (%T), want *llm.ProviderError", err, err)
	}
	return pe
}

func assertJSON(t *testing.T, got json.RawMessage, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("invalid JSON %q: %v", got, err)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want %q: %v", want, err)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("JSON = %s, want %s", got, want)
	}
}

func mustJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func asMap(t *testing.T, v any) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("want JSON object, got %T %v", v, v)
	}
	return m
}

func asSlice(t *testing.T, v any) []any {
	t.Helper()
	s, ok := v.([]any)
	if !ok {
		t.Fatalf("want JSON array, got %T %v", v, v)
	}
	return s
}
