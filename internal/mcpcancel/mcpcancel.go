// Package mcpcancel ties an MCP tool call to the HTTP request it arrived
// on, so that a client that disconnects cancels what the call started (an
// agent run, the model request in flight, a bash command).
//
// Why it is needed: with protocol versions before 2026-07-28 (the TS SDK,
// the inspector, curl without an MCP-Protocol-Version header, older go-sdk
// clients) go-sdk's stateless handler runs a tool under a context that the
// HTTP request does not cancel, and the client's notifications/cancelled
// arrives in another POST, hence another temporary session, where it
// cancels nothing. The SDK's PropagateRequestCancellation covers
// 2026-07-28 only. Bind records each request's context under a fresh id in
// a header that only it sets; the tool handler finds it with CallContext.
package mcpcancel

import (
	"context"
	"net/http"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Requests maps the ids Bind hands out to the contexts of the HTTP
// requests in flight. The zero value is not usable; use New.
type Requests struct {
	header string
	mu     sync.Mutex
	seq    uint64
	ctxs   map[string]context.Context
}

// New returns an empty map whose ids travel in the named request header.
// Whatever a client sends under that name is overwritten.
func New(header string) *Requests {
	return &Requests{header: header, ctxs: map[string]context.Context{}}
}

// Bind records r's context for the duration of the request.
func (rs *Requests) Bind(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rs.mu.Lock()
		rs.seq++
		id := strconv.FormatUint(rs.seq, 10)
		rs.ctxs[id] = r.Context()
		rs.mu.Unlock()
		defer func() {
			rs.mu.Lock()
			delete(rs.ctxs, id)
			rs.mu.Unlock()
		}()
		r.Header.Set(rs.header, id)
		next.ServeHTTP(w, r)
	})
}

// CallContext returns ctx, also cancelled when the HTTP request the call
// arrived on ends. A call that did not come through Bind gets ctx alone.
func (rs *Requests) CallContext(ctx context.Context, req *mcp.CallToolRequest) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if req == nil || req.Extra == nil || req.Extra.Header == nil {
		return ctx, cancel
	}
	rs.mu.Lock()
	rctx := rs.ctxs[req.Extra.Header.Get(rs.header)]
	rs.mu.Unlock()
	if rctx == nil {
		return ctx, cancel
	}
	stop := context.AfterFunc(rctx, cancel)
	return ctx, func() { stop(); cancel() }
}
