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
	if _, err := http.DefaultClient.Do(req); err == nil {
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
