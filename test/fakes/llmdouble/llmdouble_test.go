package llmdouble_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/garraia/garra/test/fakes/llmdouble"
)

func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	return res.StatusCode, m
}

func TestEchoMode(t *testing.T) {
	s := llmdouble.New(t)
	_, m := post(t, s.URL()+"/v1/chat/completions",
		`{"model":"x","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"hello"}]}]}`)
	msg := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	if msg["content"] != "echo: hello" {
		t.Errorf("openai echo = %v", msg)
	}
	_, m = post(t, s.URL()+"/v1/messages",
		`{"model":"x","max_tokens":5,"system":"s","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"a"},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"}]}]}`)
	block := m["content"].([]any)[0].(map[string]any)
	if block["text"] != "echo: hi" || m["stop_reason"] != "end_turn" {
		t.Errorf("anthropic echo = %v", m)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].System != "s" || reqs[1].System != "s" || reqs[1].MaxTokens != 5 {
		t.Errorf("recorded = %+v", reqs)
	}
}

func TestScriptExhausted(t *testing.T) {
	s := llmdouble.New(t, llmdouble.Step{Text: "one"})
	url := s.URL() + "/api/v1/chat/completions"
	for i, want := range []string{"one", llmdouble.ExhaustedText} {
		_, m := post(t, url, `{"model":"x","messages":[]}`)
		got := m["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]
		if got != want {
			t.Errorf("reply %d = %v, want %q", i, got, want)
		}
	}
	reqs := s.Requests()
	if reqs[0].Exhausted || !reqs[1].Exhausted || s.Remaining() != 0 {
		t.Errorf("exhaustion not recorded: %+v", reqs)
	}
}

func TestErrorShapes(t *testing.T) {
	s := llmdouble.New(t,
		llmdouble.Step{Status: 429, ErrorMessage: "slow down"},
		llmdouble.Step{Status: 529},
	)
	code, m := post(t, s.URL()+"/v1/chat/completions", `{"model":"x","messages":[]}`)
	e := m["error"].(map[string]any)
	if code != 429 || e["message"] != "slow down" || e["code"] != "rate_limit_exceeded" {
		t.Errorf("openai error = %d %v", code, m)
	}
	code, m = post(t, s.URL()+"/v1/messages", `{"model":"x","messages":[]}`)
	e = m["error"].(map[string]any)
	if code != 529 || m["type"] != "error" || e["type"] != "overloaded_error" {
		t.Errorf("anthropic error = %d %v", code, m)
	}
}

func TestUnknownRouteAndBadBody(t *testing.T) {
	s := llmdouble.New(t, llmdouble.Step{Text: "kept"})
	if code, _ := post(t, s.URL()+"/v1/embeddings", `{}`); code != 404 {
		t.Errorf("unknown route status = %d", code)
	}
	if code, _ := post(t, s.URL()+"/v1/messages", `not json`); code != 400 {
		t.Errorf("bad body status = %d", code)
	}
	if s.Remaining() != 1 || len(s.Requests()) != 2 {
		t.Errorf("failed requests must be recorded but not consume steps")
	}
}

func TestDelayHonoursCancellation(t *testing.T) {
	s := llmdouble.New(t, llmdouble.Step{Text: "late", Delay: time.Minute})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/messages", strings.NewReader(`{"model":"x"}`))
	start := time.Now()
	if res, err := http.DefaultClient.Do(req); err == nil {
		_ = res.Body.Close()
		t.Fatal("expected a timeout")
	}
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close hung on a delayed handler")
	}
	if time.Since(start) > 5*time.Second {
		t.Error("slow")
	}
}

func TestConcurrent(t *testing.T) {
	s := llmdouble.New(t)
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := http.Post(s.URL()+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"x","messages":[{"role":"user","content":"c"}]}`))
			if err == nil {
				res.Body.Close()
			}
		}()
	}
	wg.Wait()
	if n := len(s.Requests()); n != 20 {
		t.Errorf("recorded %d requests", n)
	}
}

func TestNewListenerNilT(t *testing.T) {
	s, err := llmdouble.NewListener("127.0.0.1:0", llmdouble.Step{Text: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") || s.OpenAIBaseURL() != s.URL()+"/v1" || s.AnthropicBaseURL() != s.URL() {
		t.Errorf("URLs: %s %s %s", s.URL(), s.OpenAIBaseURL(), s.AnthropicBaseURL())
	}
	s2 := llmdouble.New(nil)
	s2.Close()
	s2.Close() // idempotent
}

func TestAdminAPI(t *testing.T) {
	s := llmdouble.New(t)
	// Off by default: the control path is just an unknown route.
	if code, err := getStatus(s.URL() + "/_double/healthz"); err != nil || code != http.StatusNotFound {
		t.Fatalf("control API answered before EnableAdmin: %d %v", code, err)
	}
	s.EnableAdmin()

	put := func(body string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPut, s.URL()+"/_double/script", strings.NewReader(body))
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	for _, bad := range []string{`{"steps":[{"tool_calls":[{"args":"{}"}]}]}`, `{"stepz":[]}`, `{"steps":[{"delay_ms":-1}]}`, `nope`} {
		if code := put(bad); code != http.StatusBadRequest {
			t.Errorf("PUT %s = %d, want 400", bad, code)
		}
	}
	if code := put(`{"steps":[{"tool_calls":[{"id":"c1","name":"bash","args":"{\"command\":\"pwd\"}"}]},{"text":"done"}]}`); code != http.StatusNoContent {
		t.Fatalf("PUT script = %d", code)
	}

	req, _ := http.NewRequest(http.MethodPost, s.URL()+"/v1/chat/completions",
		strings.NewReader(`{"model":"m1","messages":[{"role":"user","content":"go"}],"tools":[{"type":"function","function":{"name":"bash"}}]}`))
	req.Header.Set("Authorization", "Bearer k-123")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var reply map[string]any
	_ = json.NewDecoder(res.Body).Decode(&reply)
	res.Body.Close()
	msg := reply["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)
	call := msg["tool_calls"].([]any)[0].(map[string]any)
	if call["id"] != "c1" || call["function"].(map[string]any)["name"] != "bash" {
		t.Errorf("scripted tool call = %v", msg)
	}

	res, err = http.Get(s.URL() + "/_double/requests")
	if err != nil {
		t.Fatal(err)
	}
	var got llmdouble.RequestsResponse
	if err := json.NewDecoder(res.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got.Remaining != 1 || len(got.Requests) != 1 {
		t.Fatalf("requests = %+v", got)
	}
	r := got.Requests[0]
	if r.Protocol != llmdouble.ProtocolOpenAI || r.Model != "m1" || r.APIKey != "k-123" || r.LastUserText != "go" ||
		strings.Join(r.ToolNames, ",") != "bash" || !strings.Contains(r.RawBody, `"m1"`) {
		t.Errorf("recorded = %+v", r)
	}

	// A new script forgets the old requests; an empty one is echo mode.
	if code := put(`{"steps":[]}`); code != http.StatusNoContent || len(s.Requests()) != 0 || s.Remaining() != 0 {
		t.Errorf("reset: %d, %d requests", code, len(s.Requests()))
	}
	if code, err := getStatus(s.URL() + "/_double/healthz"); err != nil || code != http.StatusOK {
		t.Errorf("healthz: %d %v", code, err)
	}
}

// getStatus GETs url and answers its status code, the body closed.
func getStatus(url string) (int, error) {
	res, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	_ = res.Body.Close()
	return res.StatusCode, nil
}
