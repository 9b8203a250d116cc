package gateway_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/gateway"
	"github.com/garraia/garra/test/fakes/llmdouble"
)

// A garra_ask success logs and audits provider, model and latency; a
// failure (provider error, refusal, bad arguments) only its kind.
func TestAskLogAndAuditLines(t *testing.T) {
	double := llmdouble.New(t, llmdouble.Step{Text: "pong"}, llmdouble.Step{Status: 401, ErrorMessage: "bad key"})
	yaml := enabled + "    allow_ask: true\nllm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
	log := audit.New(audit.Options{Path: filepath.Join(t.TempDir(), "audit.jsonl")})
	h := start(t, yaml, map[string]string{"OPENROUTER_API_KEY": "llm-test-key-0123"}, func(o *gateway.Options) { o.Audit = log })
	cs := client(t, h.url, ownerKey)

	if env, _ := call(t, cs, "garra_ask", map[string]any{"message": "ping"}); env["ok"] != true {
		t.Fatalf("success: %v", env)
	}
	if env, _ := call(t, cs, "garra_ask", map[string]any{"message": "ping"}); kindOf(env) != "provider_error" {
		t.Fatalf("provider error: %v", env)
	}
	if env, _ := call(t, cs, "garra_ask", map[string]any{"message": "ping", "model": "openrouter/auto"}); kindOf(env) != "model_not_allowed" {
		t.Fatalf("refusal: %v", env)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_ask", Arguments: map[string]any{"message": "x", "extra": 1}}); err == nil {
		t.Fatal("bad arguments accepted")
	}

	var logLines []string
	for _, l := range strings.Split(h.logs.String(), "\n") {
		if strings.Contains(l, `msg="mcp call"`) && strings.Contains(l, "tool=garra_ask") {
			logLines = append(logLines, l)
		}
	}
	_, lines := auditLines(t, log.Path())
	if len(logLines) != 4 || len(lines) != 4 {
		t.Fatalf("%d log lines, %d audit lines, want 4 each:\n%s", len(logLines), len(lines), strings.Join(logLines, "\n"))
	}
	wantKinds := []string{"", "provider_error", "model_not_allowed", "invalid_params"}
	for i, kind := range wantKinds {
		l, a := logLines[i], lines[i]
		e, _ := a["error"].(map[string]any)
		gotKind, _ := e["kind"].(string)
		if gotKind != kind || !strings.Contains(l, "error_kind="+kind) {
			t.Errorf("call %d: audit kind %q, log %s; want kind %q", i, gotKind, l, kind)
		}
		if kind == "" {
			if !strings.Contains(l, "provider=openrouter") || !strings.Contains(l, "model=z-ai/glm-5.3-flash") || !strings.Contains(l, "latency_ms=") {
				t.Errorf("success log line lacks provider, model or latency: %s", l)
			}
			if a["provider"] != "openrouter" || a["model"] != "z-ai/glm-5.3-flash" || a["latency_ms"] == nil {
				t.Errorf("success audit line lacks provider, model or latency: %v", a)
			}
			continue
		}
		for _, field := range []string{"provider=", "model=", "latency_ms="} {
			if strings.Contains(l, field) {
				t.Errorf("failure log line carries %s: %s", field, l)
			}
		}
		for _, field := range []string{"provider", "model", "latency_ms"} {
			if _, ok := a[field]; ok {
				t.Errorf("failure audit line carries %s: %v", field, a)
			}
		}
	}
}
