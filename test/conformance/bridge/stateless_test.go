package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// meta is the _meta of a stateless request at version v.
func meta(v string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v + `","io.modelcontextprotocol/clientCapabilities":{}}`
}

// postAt sends a sessionless POST with MCP-Protocol-Version version (none
// when empty).
func postAt(ctx context.Context, t *testing.T, url, version, body string) *http.Response {
	t.Helper()
	return postWith(ctx, t, url, versionHeader, version, body)
}

type reply struct {
	ID     json.RawMessage `json:"id"`
	Result struct {
		ID  json.RawMessage   `json:"id"`
		PID int               `json:"pid"`
		IDs []json.RawMessage `json:"ids"`
	} `json:"result"`
	Error *struct {
		Code int `json:"code"`
	} `json:"error"`
}

func readReply(t *testing.T, resp *http.Response) reply {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var r reply
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("not one JSON reply (status %d): %s", resp.StatusCode, b)
	}
	return r
}

// Stateless requests share one child, which sees each under an id of the
// bridge's even when callers reuse one, while a listen stream holding that
// id is open; callers get their own ids back, in responses and in the
// listen stream's subscriptionId, and a caller that goes away has its
// request cancelled in the child.
func TestStatelessRequestsShareOneChild(t *testing.T) {
	b, srv := newTestBridge(t)
	ctx := context.Background()

	listenCtx, stopListen := context.WithCancel(ctx)
	defer stopListen()
	listen := postAt(listenCtx, t, srv.URL, statelessVersion, `{"jsonrpc":"2.0","id":1,"method":"listen","params":{`+meta(statelessVersion)+`}}`)
	if listen.StatusCode != http.StatusOK || listen.Header.Get("Content-Type") != "text/event-stream" || listen.Header.Get(sessionHeader) != "" {
		t.Fatalf("listen: status %d, headers %v", listen.StatusCode, listen.Header)
	}
	sc := bufio.NewScanner(listen.Body)
	var ack string
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			ack = d
			break
		}
	}
	if !strings.Contains(ack, `"io.modelcontextprotocol/subscriptionId":1`) {
		t.Fatalf("acknowledgement %q: want the caller's id 1 as subscriptionId", ack)
	}

	var pid int
	seen := map[string]bool{}
	for range 2 {
		resp := postAt(ctx, t, srv.URL, statelessVersion, `{"jsonrpc":"2.0","id":1,"method":"seen","params":{`+meta(statelessVersion)+`}}`)
		r := readReply(t, resp)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || string(r.ID) != "1" {
			t.Fatalf("seen: status %d, id %s", resp.StatusCode, r.ID)
		}
		if seen[string(r.Result.ID)] || string(r.Result.ID) == "1" {
			t.Fatalf("the child saw id %s twice or the caller's own", r.Result.ID)
		}
		seen[string(r.Result.ID)] = true
		if pid != 0 && r.Result.PID != pid {
			t.Fatalf("answered by pids %d and %d, want one child", pid, r.Result.PID)
		}
		pid = r.Result.PID
	}

	stopListen()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r := readReply(t, postAt(ctx, t, srv.URL, statelessVersion, `{"jsonrpc":"2.0","id":2,"method":"cancelled","params":{`+meta(statelessVersion)+`}}`))
		if len(r.Result.IDs) == 1 && !seen[string(r.Result.IDs[0])] && string(r.Result.IDs[0]) != "1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the child was told of cancellations %s, want the listen request's bridge id", r.Result.IDs)
		}
		time.Sleep(20 * time.Millisecond)
	}
	b.mu.Lock()
	n := len(b.started)
	b.mu.Unlock()
	if n != 1 {
		t.Fatalf("%d children started, want 1", n)
	}
}

// What the HTTP binding of the stateless revision adds: the header must
// agree with _meta, and the child's error codes get their HTTP statuses.
func TestStatelessBinding(t *testing.T) {
	_, srv := newTestBridge(t)
	ctx := context.Background()
	tests := []struct {
		name, header, body string
		status, code       int
	}{
		{"method not found", statelessVersion, `{"jsonrpc":"2.0","id":5,"method":"fail","params":{"code":-32601,` + meta(statelessVersion) + `}}`, 404, -32601},
		{"invalid params", statelessVersion, `{"jsonrpc":"2.0","id":5,"method":"fail","params":{"code":-32602,` + meta(statelessVersion) + `}}`, 400, -32602},
		{"unsupported version", "2099-01-01", `{"jsonrpc":"2.0","id":5,"method":"fail","params":{"code":-32022,` + meta("2099-01-01") + `}}`, 400, -32022},
		{"missing capability", statelessVersion, `{"jsonrpc":"2.0","id":5,"method":"fail","params":{"code":-32021,` + meta(statelessVersion) + `}}`, 400, -32021},
		{"tool error stays 200", statelessVersion, `{"jsonrpc":"2.0","id":5,"method":"fail","params":{"code":-32603,` + meta(statelessVersion) + `}}`, 200, -32603},
		{"no header", "", `{"jsonrpc":"2.0","id":5,"method":"seen","params":{` + meta(statelessVersion) + `}}`, 400, -32020},
		{"header and _meta differ", "2025-11-25", `{"jsonrpc":"2.0","id":5,"method":"seen","params":{` + meta(statelessVersion) + `}}`, 400, -32020},
		{"no version in _meta", statelessVersion, `{"jsonrpc":"2.0","id":5,"method":"seen","params":{}}`, 400, -32602},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := postAt(ctx, t, srv.URL, tt.header, tt.body)
			r := readReply(t, resp)
			if resp.StatusCode != tt.status || r.Error == nil || r.Error.Code != tt.code || string(r.ID) != "5" {
				t.Fatalf("status %d, reply %+v; want %d with code %d and id 5", resp.StatusCode, r, tt.status, tt.code)
			}
		})
	}

	resp := postAt(ctx, t, srv.URL, statelessVersion, `[{"jsonrpc":"2.0","id":1,"method":"seen","params":{`+meta(statelessVersion)+`}}]`)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("batch: status %d, want 400", resp.StatusCode)
	}
	// An older unknown version is still refused by the bridge itself.
	if resp := postAt(ctx, t, srv.URL, "2024-01-01", `{"jsonrpc":"2.0","id":1,"method":"ping"}`); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("old unknown version: status %d, want 400", resp.StatusCode)
	}
}
