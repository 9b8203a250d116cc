package llm_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/garraia/garra/internal/llm"
	"github.com/garraia/garra/test/fakes/llmdouble"
)

func attrsOf(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

// Each wire family's model call is one GenAI client span with the token
// usage the provider reported, and a failure's Garra kind as error.type;
// the conversation itself is in none of it.
func TestTracedProviderSpans(t *testing.T) {
	const prompt, answer = "the secret recipe of Wombat-3301", "Okapi-7719 is the answer"
	for _, kind := range []llm.Kind{llm.KindOpenRouter, llm.KindAnthropic} {
		t.Run(string(kind), func(t *testing.T) {
			double := llmdouble.New(t, llmdouble.Step{Text: answer}, llmdouble.Step{Status: 500, ErrorMessage: "down"},
				llmdouble.Step{Text: "late", Delay: 2 * time.Second})
			base := double.OpenAIBaseURL()
			if kind == llm.KindAnthropic {
				base = double.AnthropicBaseURL()
			}
			p, err := llm.New(llm.Options{Kind: kind, BaseURL: base, APIKey: "key-0123456789"})
			if err != nil {
				t.Fatal(err)
			}
			rec := tracetest.NewSpanRecorder()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
			traced := llm.Traced(p, tp, base)
			req := llm.Request{Model: "m-1", System: "be brief", Messages: []llm.Message{{Role: llm.RoleUser, Content: prompt}}}
			resp, err := traced.Complete(context.Background(), req)
			if err != nil || resp.Text != answer || resp.Usage.InputTokens < 1 || resp.Usage.OutputTokens < 1 {
				t.Fatalf("complete: %+v %v", resp, err)
			}
			if _, err := traced.Complete(context.Background(), req); err == nil {
				t.Fatal("a 500 succeeded")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			if _, err := traced.Complete(ctx, req); err == nil {
				t.Fatal("a late answer beat the deadline")
			}
			spans := rec.Ended()
			if len(spans) != 3 {
				t.Fatalf("%d spans", len(spans))
			}
			ok := attrsOf(spans[0])
			if spans[0].Name() != "chat m-1" || ok["gen_ai.provider.name"].AsString() != string(kind) ||
				ok["gen_ai.request.model"].AsString() != "m-1" || ok["gen_ai.operation.name"].AsString() != "chat" ||
				ok["gen_ai.usage.input_tokens"].AsInt64() != resp.Usage.InputTokens ||
				ok["gen_ai.usage.output_tokens"].AsInt64() != resp.Usage.OutputTokens || ok["server.address"].AsString() != "127.0.0.1" {
				t.Fatalf("span %q %v", spans[0].Name(), ok)
			}
			if a := attrsOf(spans[1]); a["error.type"].AsString() != "provider_error" || a["http.response.status_code"].AsInt64() != 500 {
				t.Fatalf("500 span %v", a)
			}
			if a := attrsOf(spans[2]); a["error.type"].AsString() != "timeout" {
				t.Fatalf("timeout span %v", a)
			}
			for _, s := range spans {
				for _, kv := range s.Attributes() {
					if v := kv.Value.String(); strings.Contains(v, "Wombat") || strings.Contains(v, "Okapi") || strings.Contains(v, "brief") {
						t.Errorf("%s = %q", kv.Key, v)
					}
				}
			}
		})
	}
}
