package gateway_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

func batchOf(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `{"jsonrpc":"2.0","id":` + strconv.Itoa(i+1) + `,"method":"tools/list","params":{}}`
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// The go-sdk accepts a JSON-RPC batch when the request names no protocol
// version or one before 2025-06-18, so the per-IP limit counts each of its
// requests, not the POST.
func TestRateLimitCountsEveryRequestOfABatch(t *testing.T) {
	h := start(t, "gateway:\n  api_key: "+ownerKey+"\n  rate_limit: {requests_per_minute: 5}\n  mcp_http: {enabled: true}\n", nil)

	code, body := post(t, h.url, ownerKey, batchOf(3), nil)
	var replies []json.RawMessage
	if code != 200 || json.Unmarshal([]byte(body), &replies) != nil || len(replies) != 3 {
		t.Fatalf("a batch of 3 under the limit: %d %.300s", code, body)
	}
	// 3 of 5 spent: a batch of 3 does not fit; refused, it costs what any
	// refused POST costs (one)...
	code, body = post(t, h.url, ownerKey, batchOf(3), nil)
	if code != http.StatusTooManyRequests || !strings.Contains(body, `"kind":"too_many_requests"`) || !strings.Contains(body, "batch") {
		t.Fatalf("a batch over the limit: %d %s", code, body)
	}
	// ...so one single request still fits, and then nothing does.
	if code, body = post(t, h.url, ownerKey, toolsList, nil); code != 200 {
		t.Fatalf("the last request of the window: %d %s", code, body)
	}
	if code, _ = post(t, h.url, ownerKey, toolsList, nil); code != http.StatusTooManyRequests {
		t.Fatalf("after the window is spent: %d", code)
	}
}

// A batch bigger than the whole limit can never pass, and an
// unauthenticated one is refused by the bearer gate before it is parsed.
func TestBatchLimitEdges(t *testing.T) {
	h := start(t, "gateway:\n  api_key: "+ownerKey+"\n  rate_limit: {requests_per_minute: 3}\n  mcp_http: {enabled: true}\n", nil)
	if code, _ := post(t, h.url, "", batchOf(5), nil); code != http.StatusUnauthorized {
		t.Fatalf("unauthenticated batch: %d", code)
	}
	if code, _ := post(t, h.url, ownerKey, batchOf(5), nil); code != http.StatusTooManyRequests {
		t.Fatalf("a batch of 5 with a limit of 3: %d", code)
	}
	// Two POSTs spent so far (one each, refused): a batch of one fits.
	if code, body := post(t, h.url, ownerKey, batchOf(1), nil); code != 200 {
		t.Fatalf("a batch of one: %d %s", code, body)
	}
	if code, _ := post(t, h.url, ownerKey, toolsList, nil); code != http.StatusTooManyRequests {
		t.Fatalf("over the limit: %d", code)
	}
}

// With a protocol version of 2025-06-18 or later the SDK refuses a batch
// itself (400) — after it was counted.
func TestBatchRefusedByNewerProtocols(t *testing.T) {
	h := start(t, enabled, nil)
	code, body := post(t, h.url, ownerKey, batchOf(2), map[string]string{"MCP-Protocol-Version": "2025-06-18"})
	if code != http.StatusBadRequest || !strings.Contains(body, "batching is not supported") {
		t.Fatalf("batch with 2025-06-18: %d %s", code, body)
	}
}
