// Package mcpcancel ties an MCP tool call to the HTTP request it arrived
// on, so that a client that disconnects, or that sends a
// notifications/cancelled for it in another POST, cancels what the call
// started (an agent run, the model request in flight, a bash command).
//
// Why it is needed: with protocol versions before 2026-07-28 (the TS SDK,
// the inspector, curl without an MCP-Protocol-Version header, older go-sdk
// clients) go-sdk's stateless handler runs a tool under a context that the
// HTTP request does not cancel, and the client's notifications/cancelled
// arrives in another POST, hence another temporary session, where it
// cancels nothing. The SDK's PropagateRequestCancellation covers
// 2026-07-28 only. Bind records each request's context under a fresh id in
// a header that only it sets; the tool handler finds it with CallContext.
// BindKeyed also files the request under a key (its caller and JSON-RPC
// id), which Cancel looks up when the cancellation arrives.
package mcpcancel

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Requests maps the ids Bind hands out to the requests in flight. The zero
// value is not usable; use New.
type Requests struct {
	header string
	mu     sync.Mutex
	seq    uint64
	ctxs   map[string]*request
}

// request is one request in flight: ctx ends with the HTTP request or when
// Cancel names key.
type request struct {
	ctx    context.Context
	cancel context.CancelFunc
	key    string
}

// New returns an empty map whose ids travel in the named request header.
// Whatever a client sends under that name is overwritten.
func New(header string) *Requests {
	return &Requests{header: header, ctxs: map[string]*request{}}
}

// Bind records r's context for the duration of the request.
func (rs *Requests) Bind(next http.Handler) http.Handler { return rs.BindKeyed(nil, next) }

// BindKeyed is Bind for requests that another one may cancel: key(r) names
// r's call ("" = none, and a nil key names none), and Cancel with that key
// cancels its calls while r runs. The request itself goes on, so the SDK
// still writes the cancelled call's result.
func (rs *Requests) BindKeyed(key func(*http.Request) string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		e := &request{ctx: ctx, cancel: cancel}
		if key != nil {
			e.key = key(r)
		}
		rs.mu.Lock()
		rs.seq++
		id := strconv.FormatUint(rs.seq, 10)
		rs.ctxs[id] = e
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

// Cancel cancels the calls of the one request in flight filed under key
// and reports whether there was exactly one. Several requests under the
// same key (two clients of one caller that happen to use the same id) are
// ambiguous: none is cancelled, since the wrong run would be stopped.
func (rs *Requests) Cancel(key string) bool {
	if key == "" {
		return false
	}
	rs.mu.Lock()
	var found *request
	n := 0
	for _, e := range rs.ctxs {
		if e.key == key {
			found, n = e, n+1
		}
	}
	rs.mu.Unlock()
	if n != 1 {
		return false
	}
	found.cancel()
	return true
}

// CallContext returns ctx, also cancelled when the HTTP request the call
// arrived on ends or is cancelled. A call that did not come through Bind
// gets ctx alone.
func (rs *Requests) CallContext(ctx context.Context, req *mcp.CallToolRequest) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if req == nil || req.Extra == nil || req.Extra.Header == nil {
		return ctx, cancel
	}
	rs.mu.Lock()
	e := rs.ctxs[req.Extra.Header.Get(rs.header)]
	rs.mu.Unlock()
	if e == nil {
		return ctx, cancel
	}
	stop := context.AfterFunc(e.ctx, cancel)
	return ctx, func() { stop(); cancel() }
}

// CancelledID is the requestId of a notifications/cancelled's params, if
// it has a usable one (a string or a number).
func CancelledID(params json.RawMessage) (jsonrpc.ID, bool) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &p) != nil || p.RequestID == nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	return id, err == nil
}
