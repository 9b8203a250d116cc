package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/authn/authntest"
	"github.com/garraia/garra/internal/chat"
	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/gateway"
)

// Every HTTP row of docs/errors.md (internal/errkinds.HTTP) is replayed
// against a real gateway: a row without a scenario, or a scenario that
// answers differently, fails here.
func TestErrorTableHTTPRowsMatchTheGateway(t *testing.T) {
	h := start(t, "gateway:\n  api_key: "+ownerKey+"\n  rate_limit: {requests_per_minute: 1000}\n  mcp_http: {enabled: true}\n", nil)
	off := start(t, "gateway: {api_key: "+ownerKey+"}\n", nil)
	limited := start(t, "gateway:\n  api_key: "+ownerKey+"\n  rate_limit: {requests_per_minute: 1}\n  mcp_http: {enabled: true}\n", nil)
	batchLimited := start(t, "gateway:\n  api_key: "+ownerKey+"\n  rate_limit: {requests_per_minute: 2}\n  mcp_http: {enabled: true}\n", nil)

	type result struct {
		status int
		body   string
	}
	do := func(method, url, token, body string, hdr map[string]string) result {
		status, b := request(t, method, url, token, body, hdr)
		return result{status, b}
	}
	is := authntest.NewIssuer(t)
	idp := start(t, identityConfig(is.URL), map[string]string{"LEGACY_KEY": "legacy-token-0123456789", "KUBERNETES_SERVICE_HOST": "10.0.0.1"},
		func(o *gateway.Options) { o.Reviewer = &tableReviewer{} })
	dead := httptest.NewServer(nil)
	dead.Close()
	noIDP := start(t, identityConfig(dead.URL), map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1"},
		func(o *gateway.Options) { o.Reviewer = &tableReviewer{} })
	alpha := func(extra map[string]any) map[string]any {
		c := map[string]any{"sub": "alpha-bot", "aud": audAlpha}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	drained := start(t, "gateway:\n  api_key: "+ownerKey+"\n  mcp_http: {enabled: true}\n", nil)
	drained.gw.Drain(time.Millisecond) // nothing in flight: returns at once
	scenarios := map[string]func() result{
		errkinds.RefuseDraining.Body: func() result { return do("POST", drained.url, ownerKey, toolsList, nil) },
		"404 page not found":         func() result { return do("POST", off.url, ownerKey, toolsList, nil) },
		"too many requests": func() result {
			do("POST", limited.url, ownerKey, toolsList, nil)
			return do("POST", limited.url, ownerKey, toolsList, nil)
		},
		"too many requests: a JSON-RPC batch counts each of its requests": func() result {
			return do("POST", batchLimited.url, ownerKey, batchOf(3), nil)
		},
		"JSON-RPC batching is not supported": func() result {
			return do("POST", h.url, ownerKey, batchOf(2), map[string]string{"MCP-Protocol-Version": "2025-06-18"})
		},
		"cross-origin request refused": func() result {
			return do("POST", h.url, ownerKey, toolsList, map[string]string{"Origin": "https://evil.example.com", "Sec-Fetch-Site": "cross-site"})
		},
		"invalid Host header": func() result {
			return do("POST", h.url, ownerKey, toolsList, map[string]string{"Host": "evil.example.com"})
		},
		"missing bearer token": func() result { return do("POST", h.url, "", toolsList, nil) },
		"invalid bearer token": func() result { return do("POST", h.url, "nope-nope-nope", toolsList, nil) },
		errkinds.RefuseInvalidToken.Body: func() result {
			return do("POST", idp.url, authntest.Unsigned(alpha(map[string]any{"iss": is.URL})), toolsList, nil)
		},
		errkinds.RefuseTokenExpired.Body: func() result {
			return do("POST", idp.url, is.Sign(nil, alpha(map[string]any{"exp": time.Now().Add(-time.Hour).Unix()})), toolsList, nil)
		},
		errkinds.RefuseWrongAudience.Body: func() result {
			return do("POST", idp.url, is.Sign(nil, alpha(map[string]any{"aud": "elsewhere"})), toolsList, nil)
		},
		errkinds.RefuseIdentityNotAllowed.Body: func() result {
			return do("POST", idp.url, is.Sign(nil, alpha(map[string]any{"sub": "mallory"})), toolsList, nil)
		},
		errkinds.RefuseAuthUnavailable.Body: func() result {
			return do("POST", noIDP.url, is.Sign(nil, alpha(map[string]any{"iss": dead.URL})), toolsList, nil)
		},
		"Accept must list both application/json and text/event-stream": func() result {
			return do("POST", h.url, ownerKey, toolsList, map[string]string{"Accept": "application/json"})
		},
		"Method Not Allowed": func() result { return do("GET", h.url, ownerKey, "", nil) },
		"Content-Type must be 'application/json'": func() result {
			return do("POST", h.url, ownerKey, toolsList, map[string]string{"Content-Type": "text/plain"})
		},
		"request body exceeds 4194304 bytes": func() result {
			return do("POST", h.url, ownerKey, `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":"`+strings.Repeat("a", 4<<20)+`"}}`, nil)
		},
		"malformed payload": func() result { return do("POST", h.url, ownerKey, "this is not json", nil) },
		"JSON RPC not handled": func() result {
			return do("POST", h.url, ownerKey, `{"jsonrpc":"2.0","id":1,"method":"nope/nope","params":{}}`, nil)
		},
	}
	for _, row := range errkinds.HTTP {
		t.Run(row.Body, func(t *testing.T) {
			sc, ok := scenarios[row.Body]
			if !ok {
				t.Fatalf("errkinds.HTTP row %d %q has no scenario here: add one", row.Status, row.Body)
			}
			got := sc()
			if got.status != row.Status {
				t.Fatalf("status %d, table says %d (body %.200s)", got.status, row.Status, got.body)
			}
			if row.Error == "" {
				if !strings.HasPrefix(got.body, row.Body) {
					t.Fatalf("plain body %.200q does not start with %q", got.body, row.Body)
				}
				return
			}
			if row.Status == 429 {
				// POST /mcp's 429 is a JSON-RPC error whose message
				// starts with the row's and goes on with the limit.
				var resp struct {
					Error struct {
						Code    int64
						Message string
						Data    struct{ Kind string }
					}
				}
				if err := json.Unmarshal([]byte(got.body), &resp); err != nil || resp.Error.Code != int64(errkinds.RPCTooManyRequests.Code) ||
					!strings.HasPrefix(resp.Error.Message, row.Body+": this gateway allows") || resp.Error.Data.Kind != row.Error {
					t.Fatalf("body %s, table says a JSON-RPC error %d, kind %q, message %q…", got.body, errkinds.RPCTooManyRequests.Code, row.Error, row.Body)
				}
				return
			}
			var body map[string]string
			if err := json.Unmarshal([]byte(got.body), &body); err != nil || body["error"] != row.Error || body["message"] != row.Body {
				t.Fatalf("body %s, table says error %q message %q", got.body, row.Error, row.Body)
			}
		})
	}
	// The audit kinds of the table are the metric labels the gateway uses.
	m := metricsText(t, h.url) + metricsText(t, drained.url) + metricsText(t, idp.url) + metricsText(t, noIDP.url)
	for _, row := range errkinds.HTTP {
		if row.Audit != "" && row.Audit != "too_many_requests" && !strings.Contains(m, `garra_mcp_refusals_total{kind="`+string(row.Audit)+`"}`) {
			t.Errorf("metrics have no refusal %q:\n%s", row.Audit, grep(m, "refusals"))
		}
	}
}

// failingStore fails every read.
type failingStore struct{}

func (failingStore) Conversations(context.Context, string) ([]chat.Conversation, error) {
	return nil, errors.New("disk on fire")
}
func (failingStore) History(context.Context, string, int) ([]chat.Message, error) {
	return nil, errors.New("disk on fire")
}
func (failingStore) Pairing(context.Context) ([]chat.PairStatus, error) {
	return nil, errors.New("disk on fire")
}

// Every JSON-RPC row is what the gateway answers.
func TestErrorTableJSONRPCRowsMatchTheGateway(t *testing.T) {
	h := start(t, enabled, nil, func(o *gateway.Options) { o.Store = failingStore{} })
	cs := client(t, h.url, ownerKey)
	ctx := context.Background()
	code := func(err error) (int64, string) {
		t.Helper()
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) {
			t.Fatalf("err %v is not a JSON-RPC error", err)
		}
		return werr.Code, werr.Message
	}
	seen := map[int]bool{}
	check := func(err error, want int, prefix string) {
		t.Helper()
		c, msg := code(err)
		if c != int64(want) || !strings.HasPrefix(msg, prefix) {
			t.Fatalf("got %d %q, want %d %q…", c, msg, want, prefix)
		}
		seen[want] = true
	}
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "garra_read_history", Arguments: map[string]any{"chat": "x", "extra": 1}})
	check(err, -32602, "")
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "garra_nope"})
	check(err, -32602, `unknown tool "garra_nope"`)
	_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "delegate_task"})
	check(err, -32602, `unknown prompt "delegate_task"`)
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "garra://nope"})
	check(err, -32602, "Resource not found")
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "garra://chats"})
	check(err, -32603, "the conversation store is unavailable")
	// An unknown method, the way a client without it in its API sends it.
	status, body := post(t, h.url, ownerKey, `{"jsonrpc":"2.0","id":9,"method":"resources/subscribe","params":{"uri":"garra://policy"}}`, nil)
	var resp struct {
		Error *jsonrpc.Error `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || status != 200 || resp.Error == nil {
		t.Fatalf("unknown method: %d %s", status, body)
	}
	check(resp.Error, -32601, "method not found")
	for _, row := range errkinds.JSONRPC {
		if !seen[row.Code] {
			t.Errorf("errkinds.JSONRPC row %d is not exercised here", row.Code)
		}
	}
}
