package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/test/fakes/llmdouble"
	"github.com/garraia/garra/test/fakes/otlpdouble"
)

// `garra mcp-server` with an OTLP endpoint traces each request over stdio
// (network.transport pipe) and its model call, and flushes them at exit;
// neither the question nor the answer nor the key is in any span.
func TestStdioServerTraces(t *testing.T) {
	const question, answer = "Capital of Zanzibar-5521?", "Quokka-1187 city"
	otlp := otlpdouble.New(t)
	double := llmdouble.New(t, llmdouble.Step{Text: answer}, llmdouble.Step{Status: 400, ErrorMessage: "bad request"})
	cfg := writeConfig(t, "openrouter", double.URL()+"/v1")
	env := testEnv(t, "OPENROUTER_API_KEY="+fakeKey, "OTEL_EXPORTER_OTLP_ENDPOINT="+otlp.URL, "OTEL_SERVICE_NAME=laptop-garra")
	cs, _, stderr := startServer(t, env, "--config", cfg)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_ask", Arguments: map[string]any{"message": question}})
	if err != nil || res.IsError {
		t.Fatalf("call: %v %v", res, err)
	}
	// A provider failure: its kind is the span's error.type.
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_ask", Arguments: map[string]any{"message": "again"}}); err != nil || !res.IsError {
		t.Fatalf("failing call: %v %v", res, err)
	}
	_ = cs.Close() // end of input: the server exits, flushing its spans

	var server, chat, failed *otlpdouble.Span
	deadline := time.Now().Add(10 * time.Second)
	for server == nil || chat == nil || failed == nil {
		if time.Now().After(deadline) {
			t.Fatalf("spans %d; stderr:\n%s", len(otlp.Spans()), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
		for _, s := range otlp.Spans() {
			switch s.GetName() {
			case "tools/call garra_ask":
				if s.Attr("error.type") == "" {
					server = &s
				} else {
					failed = &s
				}
			case "chat z-ai/glm-5.3-flash":
				if s.Attr("error.type") == "" {
					chat = &s
				}
			}
		}
	}
	if server.GetKind().String() != "SPAN_KIND_SERVER" || server.Attr("network.transport") != "pipe" ||
		server.Attr("gen_ai.tool.name") != "garra_ask" || server.Service != "laptop-garra" {
		t.Fatalf("server span: %v %v %s", server.GetKind(), server.Attrs(), server.Service)
	}
	if failed.Attr("error.type") != "provider_error" || failed.GetStatus().GetCode().String() != "STATUS_CODE_ERROR" {
		t.Fatalf("failed call's span: %v %v", failed.Attrs(), failed.GetStatus())
	}
	if chat.ParentID() != server.SpanID() || chat.TraceID() != server.TraceID() || chat.Attr("gen_ai.provider.name") != "openrouter" {
		t.Fatalf("chat span: parent %s trace %s %v", chat.ParentID(), chat.TraceID(), chat.Attrs())
	}
	for _, s := range otlp.Spans() {
		for _, text := range s.Texts() {
			if strings.Contains(text, "Zanzibar") || strings.Contains(text, "Quokka") || strings.Contains(text, fakeKey) {
				t.Errorf("span %q carries %q", s.GetName(), text)
			}
		}
	}
	if !strings.Contains(stderr.String(), "tracing on") {
		t.Fatalf("no tracing line on stderr:\n%s", stderr.String())
	}
}

// A tracing variable that does not parse stops the command at boot,
// naming the variable.
func TestBadTracingVariableFailsAtBoot(t *testing.T) {
	for _, tt := range []struct{ cmd, env, names string }{
		{"mcp-server", "OTEL_TRACES_SAMPLER=sometimes", "OTEL_TRACES_SAMPLER"},
		{"gateway", "OTEL_EXPORTER_OTLP_ENDPOINT=collector:4318", "OTEL_EXPORTER_OTLP_ENDPOINT"},
	} {
		env := testEnv(t, tt.env)
		if tt.names != "OTEL_TRACES_SAMPLER" {
			env = append(env, "OTEL_TRACES_SAMPLER=always_on")
		} else {
			env = append(env, "OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:1")
		}
		_, errOut, code := run(t, env, tt.cmd)
		if code != 2 || !strings.Contains(errOut, tt.names) {
			t.Errorf("%s with %s: exit %d, stderr %s", tt.cmd, tt.env, code, errOut)
		}
	}
}
