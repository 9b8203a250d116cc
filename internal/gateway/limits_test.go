package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/test/fakes/llmdouble"
)

// postFull is post with the response's headers; url is the gateway's.
func postFull(t *testing.T, url, token, body string) (int, http.Header, string) {
	t.Helper()
	return requestFull(t, http.MethodPost, url, token, body, nil)
}

// retryAfter is the Retry-After header in seconds; it must be 1 to 60.
func retryAfter(t *testing.T, h http.Header) int {
	t.Helper()
	n, err := strconv.Atoi(h.Get("Retry-After"))
	if err != nil || n < 1 || n > 60 {
		t.Fatalf("Retry-After %q: want 1 to 60 seconds", h.Get("Retry-After"))
	}
	return n
}

// The per-address 429 says the limit in force and when to try again, in
// Retry-After and in a JSON-RPC error an MCP client reads as its call's:
// the request's id, a code, the message, and the numbers in data.
func TestRateLimit429CarriesTheLimit(t *testing.T) {
	h := start(t, "gateway:\n  api_key: "+ownerKey+"\n  rate_limit: {requests_per_minute: 3}\n  mcp_http: {enabled: true}\n", nil)
	for range 3 {
		if code, _, body := postFull(t, h.url, ownerKey, toolsList); code != 200 {
			t.Fatalf("%d %s", code, body)
		}
	}
	code, hdr, body := postFull(t, h.url, ownerKey, `{"jsonrpc":"2.0","id":"call-7","method":"tools/list","params":{}}`)
	if code != http.StatusTooManyRequests {
		t.Fatalf("4th request: %d %s", code, body)
	}
	secs := retryAfter(t, hdr)
	msg, err := jsonrpc.DecodeMessage([]byte(strings.TrimSpace(body)))
	resp, ok := msg.(*jsonrpc.Response)
	if err != nil || !ok || resp.Error == nil {
		t.Fatalf("the 429 body is not a JSON-RPC error response (%v): %s", err, body)
	}
	var werr *jsonrpc.Error
	if !errors.As(resp.Error, &werr) || werr.Code != -32000 || resp.ID.Raw() != "call-7" {
		t.Fatalf("error %v, id %v: want -32000 for the request's id call-7", resp.Error, resp.ID.Raw())
	}
	want := "too many requests: this gateway allows 3 requests a minute per client address (gateway.rate_limit.requests_per_minute); try again in " + strconv.Itoa(secs) + " s"
	if werr.Message != want {
		t.Fatalf("message %q\nwant    %q", werr.Message, want)
	}
	var data struct {
		Kind           string `json:"kind"`
		Limit          int    `json:"limit"`
		WindowSecs     int    `json:"window_secs"`
		RetryAfterSecs int    `json:"retry_after_secs"`
	}
	if err := json.Unmarshal(werr.Data, &data); err != nil || data.Kind != "too_many_requests" || data.Limit != 3 || data.WindowSecs != 60 || data.RetryAfterSecs != secs {
		t.Fatalf("data %s", werr.Data)
	}

	// The chat API shares the limit and says it in its own body.
	req, _ := http.NewRequest(http.MethodGet, h.url+"/api/sessions", nil)
	req.Header.Set("Authorization", "Bearer "+ownerKey)
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Body.Close()
	var apiBody map[string]string
	_ = json.NewDecoder(r2.Body).Decode(&apiBody)
	if r2.StatusCode != 429 || apiBody["error"] != "too_many_requests" || !strings.Contains(apiBody["message"], "allows 3 requests a minute per client address") {
		t.Fatalf("/api: %d %v", r2.StatusCode, apiBody)
	}
	retryAfter(t, r2.Header)
}

// A batch that needs more of the limit than is left: the same answer, with
// a null id (a batch is no one request).
func TestRateLimitBatch429CarriesTheLimit(t *testing.T) {
	h := start(t, "gateway:\n  api_key: "+ownerKey+"\n  rate_limit: {requests_per_minute: 2}\n  mcp_http: {enabled: true}\n", nil)
	code, hdr, body := postFull(t, h.url, ownerKey, batchOf(3))
	if code != 429 || !strings.Contains(body, `"id":null`) || !strings.Contains(body, "a JSON-RPC batch counts each of its requests: this gateway allows 2 requests a minute") {
		t.Fatalf("%d %s", code, body)
	}
	retryAfter(t, hdr)
}

// A 2026-07-28 client that runs into the limit after connecting sees its
// call refused as too many requests, and its session keeps the protocol
// it negotiated.
func TestRateLimitSeenByA20260728Client(t *testing.T) {
	h := start(t, "gateway:\n  api_key: "+ownerKey+"\n  rate_limit: {requests_per_minute: 2}\n  mcp_http: {enabled: true}\n", nil)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: h.url + "/mcp", HTTPClient: &http.Client{Transport: bearer{ownerKey}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	_, err = cs.ListTools(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "Too Many Requests") || strings.Contains(strings.ToLower(err.Error()), "protocol") {
		t.Fatalf("over the limit: %v", err)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s", v)
	}
}

// A spent budget's refusal names the limit in force and its setting, and
// says when to try again: in the envelope and in Retry-After.
func TestBudgetRefusalCarriesTheLimit(t *testing.T) {
	double := llmdouble.New(t) // echo
	yaml := enabled + "    allow_ask: true\n    ask_budget_per_minute: 1\nllm: {provider: openrouter, base_url: " + double.OpenAIBaseURL() + "}\n"
	h := start(t, yaml, map[string]string{"OPENROUTER_API_KEY": "llm-test-key-0123"})
	ask := `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"garra_ask","arguments":{"message":"hi"}}}`
	if code, _, body := postFull(t, h.url, ownerKey, ask); code != 200 || !strings.Contains(body, `\"ok\":true`) {
		t.Fatalf("first ask: %d %s", code, body)
	}
	code, hdr, body := postFull(t, h.url, ownerKey, ask)
	if code != 200 {
		t.Fatalf("second ask: %d %s", code, body)
	}
	secs := retryAfter(t, hdr)
	var resp struct {
		Result struct {
			Content []struct{ Text string }
		}
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || len(resp.Result.Content) != 1 {
		t.Fatalf("%v %s", err, body)
	}
	var env struct {
		Error struct {
			Kind           string `json:"kind"`
			Message        string `json:"message"`
			RetryAfterSecs int    `json:"retry_after_secs"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(resp.Result.Content[0].Text), &env); err != nil {
		t.Fatal(err)
	}
	want := "the gateway's budget for garra_ask is spent: 1 call a minute for all callers together (gateway.mcp_http.ask_budget_per_minute); try again in " + strconv.Itoa(secs) + " s"
	if env.Error.Kind != "over_budget" || env.Error.Message != want || env.Error.RetryAfterSecs != secs {
		t.Fatalf("envelope %s\nwant message %q and retry_after_secs %d", resp.Result.Content[0].Text, want, secs)
	}
}
