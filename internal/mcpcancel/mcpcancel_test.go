package mcpcancel

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const hdr = "Test-Request-Id"

// callFrom builds the CallToolRequest a handler would see for r.
func callFrom(r *http.Request) *mcp.CallToolRequest {
	return &mcp.CallToolRequest{Extra: &mcp.RequestExtra{Header: r.Header.Clone()}}
}

func TestCallEndsWithItsRequest(t *testing.T) {
	rs := New(hdr)
	reqCtx, endRequest := context.WithCancel(context.Background())
	got := make(chan context.Context, 1)
	h := rs.Bind(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		ctx, cancel := rs.CallContext(context.Background(), callFrom(r))
		defer cancel()
		got <- ctx
		<-ctx.Done()
	}))
	r := httptest.NewRequest(http.MethodPost, "/mcp", nil).WithContext(reqCtx)
	r.Header.Set(hdr, "forged") // a client's value is overwritten
	done := make(chan struct{})
	go func() { h.ServeHTTP(httptest.NewRecorder(), r); close(done) }()
	call := <-got
	if call.Err() != nil {
		t.Fatal("call cancelled before its request ended")
	}
	endRequest()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("the call was not cancelled when its request ended")
	}
	rs.mu.Lock()
	left := len(rs.ctxs)
	rs.mu.Unlock()
	if left != 0 {
		t.Errorf("%d request contexts left after the request ended", left)
	}
}

func TestUnboundCallKeepsItsContext(t *testing.T) {
	rs := New(hdr)
	for _, req := range []*mcp.CallToolRequest{nil, {}, {Extra: &mcp.RequestExtra{Header: http.Header{hdr: {"7"}}}}} {
		ctx, cancel := rs.CallContext(context.Background(), req)
		if ctx.Err() != nil {
			t.Fatalf("%+v: context already done", req)
		}
		cancel()
		if ctx.Err() == nil {
			t.Fatalf("%+v: cancel did not cancel", req)
		}
	}
}

// serveKeyed starts a request filed under key whose handler holds a call
// open until it is cancelled or release is closed; it returns the call's
// context once the call has started.
func serveKeyed(t *testing.T, rs *Requests, key string, release <-chan struct{}) (call context.Context, wrote <-chan string) {
	t.Helper()
	got := make(chan context.Context, 1)
	out := make(chan string, 1)
	h := rs.BindKeyed(func(*http.Request) string { return key }, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := rs.CallContext(context.Background(), callFrom(r))
		defer cancel()
		got <- ctx
		select {
		case <-ctx.Done():
		case <-release:
		}
		// The request itself is not cancelled: its result still goes out.
		if r.Context().Err() == nil {
			_, _ = w.Write([]byte("result"))
		}
	}))
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", nil))
		out <- rec.Body.String()
	}()
	return <-got, out
}

func TestCancelByKey(t *testing.T) {
	rs := New(hdr)
	release := make(chan struct{})
	defer close(release)

	a, wroteA := serveKeyed(t, rs, "alpha/7", release)
	b, _ := serveKeyed(t, rs, "alpha/8", release)
	if rs.Cancel("beta/7") || rs.Cancel("") || rs.Cancel("alpha/9") {
		t.Fatal("a key no request has cancelled something")
	}
	if !rs.Cancel("alpha/7") {
		t.Fatal("the one request under alpha/7 was not cancelled")
	}
	select {
	case <-a.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("the call did not end")
	}
	if got := <-wroteA; got != "result" {
		t.Fatalf("the cancelled call's request wrote %q", got)
	}
	if b.Err() != nil {
		t.Fatal("another key's call was cancelled")
	}
	if rs.Cancel("alpha/7") {
		t.Fatal("a finished request was cancelled again")
	}

	// Two requests under one key: ambiguous, neither is cancelled.
	c1, _ := serveKeyed(t, rs, "alpha/1", release)
	c2, _ := serveKeyed(t, rs, "alpha/1", release)
	if rs.Cancel("alpha/1") || c1.Err() != nil || c2.Err() != nil {
		t.Fatal("an ambiguous key cancelled a call")
	}
}

func TestCancelledID(t *testing.T) {
	for params, want := range map[string]string{
		`{"requestId":7,"reason":"x"}`: "7", `{"requestId":"a"}`: `"a"`,
		`{}`: "", `{"requestId":null}`: "", `{"requestId":{}}`: "", `not json`: "",
	} {
		id, ok := CancelledID([]byte(params))
		got := ""
		if ok {
			got = fmt.Sprintf("%#v", id.Raw())
		}
		if got != want || ok != (want != "") {
			t.Errorf("CancelledID(%s) = %s %v, want %s", params, got, ok, want)
		}
	}
}
