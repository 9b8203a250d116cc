package gateway_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/gateway"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/sandbox"
	"github.com/garraia/garra/internal/telemetry"
	"github.com/garraia/garra/test/fakes/llmdouble"
	"github.com/garraia/garra/test/fakes/otlpdouble"
)

// What the orchestrator's trace context is: the gateway's span must join
// this trace as a child of this span.
const (
	callerTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerSpanID  = "00f067aa0ba902b7"
)

// Texts that must never reach a span: the task, the model's answer, the
// command it ran and that command's output, and every credential.
const (
	tracedPrompt  = "summarise the quarterly plan for Zanzibar-7781"
	tracedAnswer  = "The plan is Quokka-4412 and nothing else"
	tracedCommand = "echo Marmoset-9023"
	tracedOutput  = "Marmoset-9023"
	tracedLLMKey  = "sk-or-v1-tracing-provider-key-0123456789"
	tracedCaller  = "alpha-token-tracing-1234567"
)

// tracerFor is a provider exporting to otlp as service, built by the real
// Setup from the variables a pod would get.
func tracerFor(t *testing.T, otlp *otlpdouble.Server, service string) (trace.TracerProvider, func()) {
	t.Helper()
	env := map[string]string{}
	if otlp != nil {
		env[telemetry.EnvEndpoint] = otlp.URL
		env[telemetry.EnvServiceName] = service
	}
	tp, shutdown, err := telemetry.Setup(context.Background(), telemetry.Options{Getenv: func(k string) string { return env[k] }, ServiceName: service})
	if err != nil {
		t.Fatal(err)
	}
	return tp, func() {
		if err := shutdown(context.Background()); err != nil {
			t.Errorf("%s: flush: %v", service, err)
		}
	}
}

// tracedRun runs one garra_agent call of an orchestrator whose tools are in
// a real sandbox, the gateway and the sandbox each with the tracer the
// variables give (none when otlp is nil), and flushes both.
func tracedRun(t *testing.T, otlp *otlpdouble.Server) (*harness, *llmdouble.Server) {
	t.Helper()
	gwTP, flushGW := tracerFor(t, otlp, "garra-gateway")
	sbxTP, flushSbx := tracerFor(t, otlp, "garra-sandbox")
	sbxURL, _, _ := startSandbox(t, func(o *sandbox.Options) { o.TracerProvider = sbxTP })
	double := llmdouble.New(t,
		llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "bash", Args: `{"command":"` + tracedCommand + `"}`}}},
		llmdouble.Step{Text: tracedAnswer})
	yaml := enabled + "    allow_agent: true\n    agent_max_seconds: 60\n" + `
    orchestrators:
      - name: alpha
        key_env: ALPHA_KEY
        tools: [agent]
        sandbox: {url: "` + sbxURL + `", token_env: SBX_TOKEN}
` + "llm: {provider: openrouter, model: test/model-a, base_url: " + double.OpenAIBaseURL() + "}\n"
	h := start(t, yaml, map[string]string{"ALPHA_KEY": tracedCaller, "OPENROUTER_API_KEY": tracedLLMKey, "SBX_TOKEN": sandboxToken},
		func(o *gateway.Options) { o.TracerProvider = gwTP })

	// The orchestrator sends its own trace context, as an instrumented
	// client does.
	hc := &http.Client{Transport: headers{"Authorization": "Bearer " + tracedCaller,
		"Traceparent": "00-" + callerTraceID + "-" + callerSpanID + "-01"}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: h.url + "/mcp", HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cs.Close() }()
	res, isErr := call(t, cs, "garra_agent", map[string]any{"message": tracedPrompt})
	if isErr || res["ok"] != true || res["answer"] != tracedAnswer {
		t.Fatalf("run: %v", res)
	}
	flushGW()
	flushSbx()
	return h, double
}

type headers map[string]string

func (hs headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range hs {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// One garra_agent run is one trace: the orchestrator's span → the
// gateway's tools/call span → the model calls and the calls to the
// sandbox → the sandbox's own spans, with the MCP and GenAI attributes,
// and not one prompt, answer, command, output or credential in any of it.
func TestTraceOfAnAgentRun(t *testing.T) {
	otlp := otlpdouble.New(t)
	_, double := tracedRun(t, otlp)
	if errs := otlp.Errors(); len(errs) > 0 {
		t.Fatalf("the collector refused exports: %v", errs)
	}
	// The gateway's own checks of its sandboxes (at start, every 30 s)
	// belong to no call: the sandbox traces them as roots of their own,
	// and they are not part of this run.
	var spans []otlpdouble.Span
	for _, s := range otlp.Spans() {
		if s.Service == "garra-sandbox" && s.ParentID() == "" {
			if m := s.Attr("mcp.method.name"); m != "server/discover" && m != "tools/list" {
				t.Errorf("a sandbox %s outside the run's trace", s.GetName())
			}
			continue
		}
		spans = append(spans, s)
	}
	byName := map[string][]otlpdouble.Span{}
	for _, s := range spans {
		byName[s.Service+" "+s.GetName()] = append(byName[s.Service+" "+s.GetName()], s)
		t.Logf("%s %-28s kind=%v id=%s parent=%s %v", s.Service, s.GetName(), s.GetKind(), s.SpanID(), s.ParentID(), s.Attrs())
		if s.TraceID() != callerTraceID {
			t.Errorf("%s %q is in trace %s, not the orchestrator's", s.Service, s.GetName(), s.TraceID())
		}
	}
	one := func(name string) otlpdouble.Span {
		t.Helper()
		if len(byName[name]) != 1 {
			t.Fatalf("%d spans %q, want 1", len(byName[name]), name)
		}
		return byName[name][0]
	}

	gw := one("garra-gateway tools/call garra_agent")
	if gw.GetKind().String() != "SPAN_KIND_SERVER" || gw.ParentID() != callerSpanID {
		t.Fatalf("gateway span: kind %v parent %s", gw.GetKind(), gw.ParentID())
	}
	for k, want := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "garra_agent",
		"gen_ai.operation.name": "execute_tool", "network.transport": "tcp", "error.type": ""} {
		if got := gw.Attr(k); got != want {
			t.Errorf("gateway span %s = %q, want %q", k, got, want)
		}
	}

	chats := byName["garra-gateway chat test/model-a"]
	if len(chats) != len(double.Requests()) || len(chats) != 2 {
		t.Fatalf("%d chat spans for %d model requests", len(chats), len(double.Requests()))
	}
	for _, c := range chats {
		if c.GetKind().String() != "SPAN_KIND_CLIENT" || c.ParentID() != gw.SpanID() {
			t.Errorf("chat span: kind %v parent %s", c.GetKind(), c.ParentID())
		}
		for k, want := range map[string]string{"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openrouter",
			"gen_ai.request.model": "test/model-a", "server.address": "127.0.0.1"} {
			if got := c.Attr(k); got != want {
				t.Errorf("chat span %s = %q, want %q", k, got, want)
			}
		}
		for _, k := range []string{"gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens"} {
			if n, err := strconv.Atoi(c.Attr(k)); err != nil || n < 1 {
				t.Errorf("chat span %s = %q", k, c.Attr(k))
			}
		}
	}

	client := one("garra-gateway tools/call bash")
	if client.GetKind().String() != "SPAN_KIND_CLIENT" || client.ParentID() != gw.SpanID() ||
		client.Attr("gen_ai.tool.name") != "bash" || client.Attr("server.address") != "127.0.0.1" {
		t.Fatalf("sandbox client span: kind %v parent %s %v", client.GetKind(), client.ParentID(), client.Attrs())
	}
	listing := one("garra-gateway tools/list")
	if listing.GetKind().String() != "SPAN_KIND_CLIENT" || listing.ParentID() != gw.SpanID() {
		t.Fatalf("tools/list client span: kind %v parent %s", listing.GetKind(), listing.ParentID())
	}
	server := one("garra-sandbox tools/call bash")
	if server.GetKind().String() != "SPAN_KIND_SERVER" || server.ParentID() != client.SpanID() ||
		server.Attr("mcp.method.name") != "tools/call" || server.Attr("error.type") != "" {
		t.Fatalf("sandbox server span: kind %v parent %s (want %s) %v", server.GetKind(), server.ParentID(), client.SpanID(), server.Attrs())
	}
	if server.Resource["service.name"] != "garra-sandbox" || gw.Resource["service.name"] != "garra-gateway" {
		t.Fatalf("resources: %v / %v", server.Resource, gw.Resource)
	}
	toolchain := one("garra-gateway resources/read")
	if toolchain.GetKind().String() != "SPAN_KIND_CLIENT" || toolchain.ParentID() != gw.SpanID() || toolchain.Attr("mcp.resource.uri") != "garra://sandbox/toolchain" {
		t.Fatalf("toolchain read span: kind %v parent %s %v", toolchain.GetKind(), toolchain.ParentID(), toolchain.Attrs())
	}
	// Every sandbox span hangs under one of the gateway's client spans.
	clients := map[string]bool{client.SpanID(): true, listing.SpanID(): true, toolchain.SpanID(): true}
	for _, s := range spans {
		if s.Service == "garra-sandbox" && !clients[s.ParentID()] {
			t.Errorf("sandbox span %q has parent %s, not a gateway client span", s.GetName(), s.ParentID())
		}
	}

	for _, s := range spans {
		for _, text := range s.Texts() {
			for _, secret := range []string{tracedPrompt, "Zanzibar", tracedAnswer, "Quokka", tracedCommand, tracedOutput,
				tracedLLMKey, tracedCaller, sandboxToken, ownerKey} {
				if strings.Contains(text, secret) {
					t.Errorf("span %q carries %q: %q", s.GetName(), secret, text)
				}
			}
		}
	}
}

// With no OTEL_* variable set there is no exporter: the same run sends the
// collector nothing.
func TestNoTraceWithoutVariables(t *testing.T) {
	otlp := otlpdouble.New(t)
	tp, _ := tracerFor(t, nil, "garra-gateway")
	if tp != nil {
		t.Fatalf("a tracer provider without any variable: %T", tp)
	}
	tracedRun(t, nil)
	if n := otlp.Requests(); n != 0 {
		t.Fatalf("%d export requests with the variables unset", n)
	}
}

// A call that fails carries the stable Garra kind (docs/errors.md) as its
// span's error.type, whether it ended as a tool result or a JSON-RPC error.
func TestTraceErrorTypeIsTheGarraKind(t *testing.T) {
	otlp := otlpdouble.New(t)
	tp, flush := tracerFor(t, otlp, "garra-gateway")
	double := llmdouble.New(t)
	yaml := enabled + "    allow_agent: true\n    agent_max_seconds: 60\n" + twoAgents +
		"llm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
	h := start(t, yaml, map[string]string{"ALPHA_KEY": "alpha-token-1234567", "OPENROUTER_API_KEY": "llm-test-key-0123"},
		func(o *gateway.Options) { o.TracerProvider = tp })
	cs := client(t, h.url, "alpha-token-1234567")
	if res, _ := call(t, cs, "garra_agent", map[string]any{"message": "x", "model": "openrouter/auto"}); kindOf(res) != string(errkinds.ModelNotAllowed) {
		t.Fatalf("model: %v", res)
	}
	if res, _ := call(t, cs, "garra_ask", map[string]any{"message": "x"}); kindOf(res) != string(errkinds.AskDisabled) {
		t.Fatalf("hidden tool: %v", res)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_agent", Arguments: map[string]any{"message": "x", "timeout_secs": 61}}); err == nil {
		t.Fatal("timeout_secs 61 accepted")
	}
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	flush()
	var got []string
	for _, s := range otlp.Spans() {
		if s.GetName() != "server/discover" {
			got = append(got, s.GetName()+"="+s.Attr("error.type")+"/"+s.GetStatus().GetCode().String()+"/"+s.Attr("rpc.response.status_code"))
		}
	}
	want := []string{
		"tools/call garra_agent=model_not_allowed/STATUS_CODE_ERROR/",
		"tools/call garra_ask=ask_disabled/STATUS_CODE_ERROR/",
		"tools/call garra_agent=invalid_params/STATUS_CODE_ERROR/-32602",
		"tools/list=/STATUS_CODE_UNSET/",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("spans:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// BenchmarkTracingOverhead: what tracing adds to a POST /mcp tools/call,
// every request sampled and exported (batched) to a loopback OTLP
// receiver that decodes it, against the same gateway with the variables
// unset. Paired legs, as in BenchmarkMCPHTTPOverhead: read mean-extra-us
// and the ratios.
func BenchmarkTracingOverhead(b *testing.B) {
	otlp := otlpdouble.New(b)
	env := map[string]string{telemetry.EnvEndpoint: otlp.URL, telemetry.EnvSampler: "always_on"}
	tp, shutdown, err := telemetry.Setup(context.Background(), telemetry.Options{Getenv: func(k string) string { return env[k] }, ServiceName: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = shutdown(context.Background()) }()
	body := benchCallBody(mcppolicy.ToolStatus)
	benchPosts(b, []benchLeg{
		{"traced", benchGatewayHandler(b, true, func(o *gateway.Options) { o.TracerProvider = tp }), body},
		{"untraced", benchGatewayHandler(b, true), body},
	})
}
