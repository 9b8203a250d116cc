package gateway_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/garraia/garra/test/fakes/llmdouble"
)

// The agent's web_fetch in a local workspace runs inside the gateway, next
// to its /metrics: loopback destinations are refused, whatever names them,
// and a host on web_fetch_allowed_hosts is reached. Every destination here
// is on loopback, so nothing can leave this machine even if the guard
// regresses; the metadata and private ranges are covered by the tools
// package's tests, whose dialer refuses anything but loopback.
func TestAgentWebFetchEgress(t *testing.T) {
	var hits atomic.Int32
	allowed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "allowed page")
	}))
	t.Cleanup(allowed.Close)
	allowedHost := strings.TrimPrefix(allowed.URL, "http://")

	double := llmdouble.New(t)
	yaml := enabled + "    allow_agent: true\n    agent_max_seconds: 60\n" +
		"    web_fetch_allowed_hosts: ['" + allowedHost + "']\n" + twoAgents +
		"llm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
	h := start(t, yaml, map[string]string{"ALPHA_KEY": "alpha-token-1234567", "OPENROUTER_API_KEY": "llm-test-key-0123"})
	gw, err := url.Parse(h.url)
	if err != nil {
		t.Fatal(err)
	}
	fetches := []struct{ url, want string }{
		{h.url + "/metrics", "web_fetch refused: 127.0.0.1 is a loopback address"},
		{"http://localhost:" + gw.Port() + "/metrics", "web_fetch refused: localhost resolves to a loopback address"},
		{"http://[::ffff:127.0.0.1]:" + gw.Port() + "/metrics", "web_fetch refused: ::ffff:127.0.0.1 is a loopback address"},
		{"http://localhost:" + strings.Split(allowedHost, ":")[1] + "/", "web_fetch refused: localhost resolves to a loopback address"},
		{allowed.URL + "/", "allowed page"},
	}
	var calls []llmdouble.Call
	for _, f := range fetches {
		calls = append(calls, llmdouble.Call{Name: "web_fetch", Args: `{"url":"` + f.url + `"}`})
	}
	double.SetScript(llmdouble.Step{ToolCalls: calls}, llmdouble.Step{Text: "done"})

	res, isErr := call(t, client(t, h.url, "alpha-token-1234567"), "garra_agent", map[string]any{"message": "fetch them"})
	if isErr || res["ok"] != true {
		t.Fatalf("agent: %v", res)
	}
	summaries := res["tool_calls"].([]any)
	if len(summaries) != len(fetches) {
		t.Fatalf("tool calls: %v", summaries)
	}
	for i, s := range summaries {
		if ok := s.(map[string]any)["success"].(bool); ok != (i == len(fetches)-1) {
			t.Errorf("call %d (%s): success %v", i, fetches[i].url, ok)
		}
	}
	reqs := double.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	sent := string(reqs[1].RawBody) // the tool results, as the model got them
	for _, f := range fetches {
		if !strings.Contains(sent, f.want) {
			t.Errorf("the model did not get %q", f.want)
		}
	}
	if strings.Contains(sent, "garra_") || strings.Contains(sent, "# HELP") {
		t.Error("the gateway's metrics reached the model")
	}
	if hits.Load() != 1 {
		t.Errorf("the allowlisted server was hit %d times, want 1", hits.Load())
	}
}

func TestBadWebFetchAllowedHostIsSkipped(t *testing.T) {
	double := llmdouble.New(t)
	yaml := enabled + "    allow_agent: true\n    agent_max_seconds: 60\n" +
		"    web_fetch_allowed_hosts: ['http://127.0.0.1/', '127.0.0.1:99999']\n" + twoAgents +
		"llm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
	h := start(t, yaml, map[string]string{"ALPHA_KEY": "alpha-token-1234567", "OPENROUTER_API_KEY": "llm-test-key-0123"})
	logs := h.logs.String()
	for _, f := range []string{"web_fetch_allowed_hosts[0]", "web_fetch_allowed_hosts[1]"} {
		if !strings.Contains(logs, "web_fetch allowed host ignored") || !strings.Contains(logs, f) {
			t.Errorf("no warning naming %s:\n%s", f, logs)
		}
	}
	// Neither entry admits anything: the gateway's own port stays refused.
	double.SetScript(llmdouble.Step{ToolCalls: []llmdouble.Call{{Name: "web_fetch", Args: `{"url":"` + h.url + `/metrics"}`}}}, llmdouble.Step{Text: "done"})
	if res, _ := call(t, client(t, h.url, "alpha-token-1234567"), "garra_agent", map[string]any{"message": "x"}); res["ok"] != true {
		t.Fatalf("agent: %v", res)
	}
	if sent := string(double.Requests()[1].RawBody); !strings.Contains(sent, "web_fetch refused: 127.0.0.1 is a loopback address") {
		t.Errorf("tool result: %s", sent)
	}
}
