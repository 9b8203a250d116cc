package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// With BRIDGE_TEST_CHILD=1 the test binary is a tiny stdio JSON-RPC server:
// it answers initialize with a recognisable result, and before answering
// "slow" it sends a log notification, a progress notification (when asked)
// and then the response.
func TestMain(m *testing.M) {
	if os.Getenv("BRIDGE_TEST_CHILD") == "1" {
		fakeChild()
		return
	}
	os.Exit(m.Run())
}

func fakeChild() {
	in := bufio.NewScanner(os.Stdin)
	out := json.NewEncoder(os.Stdout)
	var cancelled []json.RawMessage
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Code      int             `json:"code"`
				RequestID json.RawMessage `json:"requestId"`
				Meta      struct {
					ProgressToken json.RawMessage `json:"progressToken"`
				} `json:"_meta"`
			} `json:"params"`
		}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "fake child:", err)
			os.Exit(1)
		}
		switch req.Method {
		case "initialize":
			_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{
				"protocolVersion": "2025-06-18",
				"serverInfo":      map[string]any{"name": "fake-child", "version": "9.9.9"},
				"capabilities":    map[string]any{"logging": map[string]any{}},
			}})
		case "slow":
			_ = out.Encode(map[string]any{"jsonrpc": "2.0", "method": "notifications/message",
				"params": map[string]any{"level": "info", "data": "working"}})
			if req.Params.Meta.ProgressToken != nil {
				_ = out.Encode(map[string]any{"jsonrpc": "2.0", "method": "notifications/progress",
					"params": map[string]any{"progressToken": req.Params.Meta.ProgressToken, "progress": 1}})
			}
			_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"done": true}})
		case "seen": // answers with the id it was given and its pid
			_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"id": req.ID, "pid": os.Getpid()}})
		case "listen": // acknowledges, and answers only when cancelled
			_ = out.Encode(map[string]any{"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
				"params": map[string]any{"_meta": map[string]any{"io.modelcontextprotocol/subscriptionId": req.ID}}})
		case "fail":
			_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "error": map[string]any{"code": req.Params.Code, "message": "failed as asked"}})
		case "notifications/cancelled":
			cancelled = append(cancelled, req.Params.RequestID)
		case "cancelled": // the request ids cancelled so far
			_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"ids": cancelled}})
		default:
			if req.ID != nil {
				_ = out.Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{}})
			}
		}
	}
}

func newTestBridge(t *testing.T) (*bridge, *httptest.Server) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("BRIDGE_TEST_CHILD", "1")
	b := &bridge{command: []string{exe}, sessions: map[string]*session{}}
	srv := httptest.NewServer(b)
	t.Cleanup(func() {
		srv.Close()
		b.closeAll()
	})
	return b, srv
}

func post(t *testing.T, url, session, body string) *http.Response {
	t.Helper()
	return postWith(context.Background(), t, url, sessionHeader, session, body)
}

// postWith POSTs body as an MCP client does, with header name set to value
// unless value is empty.
func postWith(ctx context.Context, t *testing.T, url, name, value, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if value != "" {
		req.Header.Set(name, value)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// sseData returns the data lines of an SSE body, in order.
func sseData(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

func TestForwardsToChild(t *testing.T) {
	b, srv := newTestBridge(t)

	resp := post(t, srv.URL, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("initialize: status %d", resp.StatusCode)
	}
	sid := resp.Header.Get(sessionHeader)
	if sid == "" {
		t.Fatal("initialize: no session id")
	}
	msgs := sseData(t, resp.Body)
	if len(msgs) != 1 || !strings.Contains(msgs[0], `"fake-child"`) || !strings.Contains(msgs[0], `"id":1`) {
		t.Fatalf("initialize: want the child's own result, got %q", msgs)
	}

	resp = post(t, srv.URL, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notification: status %d, want 202", resp.StatusCode)
	}

	// Notifications the child sends while a request is open travel on that
	// request's stream, before its response.
	resp = post(t, srv.URL, sid, `{"jsonrpc":"2.0","id":"a","method":"slow","params":{"_meta":{"progressToken":7}}}`)
	msgs = sseData(t, resp.Body)
	if len(msgs) != 3 ||
		!strings.Contains(msgs[0], "notifications/message") ||
		!strings.Contains(msgs[1], `"progressToken":7`) ||
		!strings.Contains(msgs[2], `"id":"a"`) {
		t.Fatalf("slow: got %q", msgs)
	}

	req, _ := http.NewRequest(http.MethodDelete, srv.URL, nil)
	req.Header.Set(sessionHeader, sid)
	dresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = dresp.Body.Close()
	if dresp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: status %d", dresp.StatusCode)
	}
	b.mu.Lock()
	s := b.started[0]
	b.mu.Unlock()
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("child still running after DELETE")
	}
	if resp := post(t, srv.URL, sid, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("after DELETE: status %d, want 404", resp.StatusCode)
	}
}

func TestTransportChecks(t *testing.T) {
	_, srv := newTestBridge(t)

	if resp := post(t, srv.URL, "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("no session, not initialize: status %d, want 400", resp.StatusCode)
	}
	if resp := post(t, srv.URL, "nope", `{"jsonrpc":"2.0","id":1,"method":"ping"}`); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown session: status %d, want 404", resp.StatusCode)
	}

	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`))
	req.Host = "evil.example.com"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: status %d, want 403", resp.StatusCode)
	}
}

func TestSplitMessages(t *testing.T) {
	msgs, err := splitMessages([]byte("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"},\n {\"jsonrpc\":\"2.0\",\"method\":\"b\"}]"))
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || !msgs[0].isRequest() || msgs[1].isRequest() || string(msgs[1].raw) != `{"jsonrpc":"2.0","method":"b"}` {
		t.Fatalf("got %+v", msgs)
	}
	for _, bad := range []string{``, `[]`, `{"id":1}`, `{`} {
		if _, err := splitMessages([]byte(bad)); err == nil {
			t.Errorf("splitMessages(%q): want error", bad)
		}
	}
}
