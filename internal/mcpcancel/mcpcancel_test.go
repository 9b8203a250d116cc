package mcpcancel

import (
	"context"
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
