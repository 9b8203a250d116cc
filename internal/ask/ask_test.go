package ask_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/redact"
	"github.com/garraia/garra/test/fakes/llmdouble"
)

const leakedKey = "sk-ant-api03-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

func coreFor(t *testing.T, yaml string, env map[string]string) *ask.Core {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	red, errs := redact.New([]string{`corp-[0-9]{6}`})
	if len(errs) != 0 {
		t.Fatal(errs)
	}
	return &ask.Core{Config: cfg, Redactor: red, Getenv: func(k string) string { return env[k] }}
}

func TestAskThroughBothWireFamilies(t *testing.T) {
	for _, provider := range []string{"openrouter", "anthropic", "openai", "ollama"} {
		t.Run(provider, func(t *testing.T) {
			d := llmdouble.New(t, llmdouble.Step{Text: "pong corp-123456"})
			base := d.OpenAIBaseURL()
			if provider == "anthropic" {
				base = d.AnthropicBaseURL()
			}
			core := coreFor(t, "llm: {provider: "+provider+", base_url: "+base+"}",
				map[string]string{"OPENROUTER_API_KEY": "k1", "ANTHROPIC_API_KEY": "k2", "OPENAI_API_KEY": "k3"})
			env := core.Ask(context.Background(), ask.Request{Message: "ping", Provider: provider, Model: "m1", SystemPrompt: "sys"})
			if !env.OK || env.Answer != "pong [REDACTED]" || env.Provider != provider || env.Model != "m1" {
				t.Fatalf("envelope %+v", env)
			}
			r := d.Requests()[0]
			if r.Model != "m1" || r.MaxTokens != 4096 || r.System != "sys" || r.LastUserText != "ping" {
				t.Fatalf("request %+v", r)
			}
		})
	}
}

func TestAskFailures(t *testing.T) {
	tests := []struct {
		name     string
		step     llmdouble.Step
		env      map[string]string
		timeout  int
		wantKind errkinds.Kind
		wantMsg  string
	}{
		{"401 redacted", llmdouble.Step{Status: 401, ErrorMessage: "bad key " + leakedKey}, map[string]string{"ANTHROPIC_API_KEY": "k"}, 5, errkinds.ProviderError, "401"},
		{"429", llmdouble.Step{Status: 429, ErrorMessage: "rate limited"}, map[string]string{"ANTHROPIC_API_KEY": "k"}, 5, errkinds.ProviderError, "rate limited"},
		{"500", llmdouble.Step{Status: 500, ErrorMessage: "overloaded"}, map[string]string{"ANTHROPIC_API_KEY": "k"}, 5, errkinds.ProviderError, "overloaded"},
		{"malformed", llmdouble.Step{Malformed: true}, map[string]string{"ANTHROPIC_API_KEY": "k"}, 5, errkinds.ProviderError, "anthropic"},
		{"slow", llmdouble.Step{Text: "late", Delay: 3 * time.Second}, map[string]string{"ANTHROPIC_API_KEY": "k"}, 1, errkinds.Timeout, "within 1 seconds"},
		{"no key", llmdouble.Step{Text: "never"}, nil, 5, errkinds.ProviderError, "ANTHROPIC_API_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := llmdouble.New(t, tt.step)
			core := coreFor(t, "llm: {provider: anthropic, base_url: "+d.AnthropicBaseURL()+"}", tt.env)
			start := time.Now()
			env := core.Ask(context.Background(), ask.Request{Message: "hi", Provider: "anthropic", TimeoutSecs: tt.timeout})
			if env.OK || env.Error.Kind != tt.wantKind || !strings.Contains(env.Error.Message, tt.wantMsg) {
				t.Fatalf("envelope %+v", env.Error)
			}
			if strings.Contains(env.JSON(), "AAAAAAAAAAAAAAAA") {
				t.Fatalf("key leaked: %s", env.JSON())
			}
			if time.Since(start) > 2500*time.Millisecond {
				t.Fatalf("took %v", time.Since(start))
			}
		})
	}
}

func TestAskUsage(t *testing.T) {
	core := coreFor(t, "{}", nil)
	tests := []struct {
		req   ask.Request
		field string
	}{
		{ask.Request{Message: " "}, "message"},
		{ask.Request{Message: strings.Repeat("x", ask.MaxMessageBytes+1)}, "message"},
		{ask.Request{Message: "\xff"}, "message"},
		{ask.Request{Message: "x", SystemPrompt: strings.Repeat("x", ask.MaxSystemPromptBytes+1)}, "system_prompt"},
		{ask.Request{Message: "x", Provider: "gemini"}, "provider"},
		{ask.Request{Message: "x", TimeoutSecs: 601}, "timeout_secs"},
		{ask.Request{Message: "x", TimeoutSecs: -1}, "timeout_secs"},
	}
	for _, tt := range tests {
		env := core.Ask(context.Background(), tt.req)
		if env.OK || env.Error.Kind != errkinds.Usage || !strings.HasPrefix(env.Error.Message, tt.field) {
			t.Errorf("%+v: got %+v", tt.req.Provider, env.Error)
		}
	}
}

func TestEnvelopeJSONShapes(t *testing.T) {
	ok := ask.Envelope{OK: true, Answer: "", Provider: "openrouter", Model: "z-ai/glm-5.3-flash", LatencyMS: 12}.JSON()
	if ok != `{"schema":"garra.ask.v1","ok":true,"answer":"","provider":"openrouter","model":"z-ai/glm-5.3-flash","latency_ms":12}` {
		t.Fatalf("success shape: %s", ok)
	}
	fail := ask.Envelope{Error: &ask.Error{Kind: "timeout", Message: "no answer"}, Provider: "x", LatencyMS: 3}.JSON()
	if fail != `{"schema":"garra.ask.v1","ok":false,"error":{"kind":"timeout","message":"no answer"}}` {
		t.Fatalf("failure shape: %s", fail)
	}
	if !json.Valid([]byte(ok)) || !json.Valid([]byte(fail)) {
		t.Fatal("invalid JSON")
	}
}
