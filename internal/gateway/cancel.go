package gateway

import (
	"context"
	"net/http"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// requestContexts ties a tool call to the HTTP request it arrived on, so
// that a client that disconnects cancels what it started (an agent run,
// the LLM request in flight, the sandbox command).
//
// Why: with protocol versions before 2026-07-28 (the TS SDK, inspector,
// curl without an MCP-Protocol-Version header) the go-sdk's stateless
// handler runs the tool under a context the HTTP request does not cancel,
// and a notifications/cancelled arrives in another POST, hence another
// temporary session, where it cancels nothing. PropagateRequestCancellation
// covers 2026-07-28 only. The middleware records the request's context
// under a fresh id in a header only it sets; the tool handler looks it up.
type requestContexts struct {
	mu   sync.Mutex
	seq  uint64
	ctxs map[string]context.Context
}

// requestIDHeader carries the id from bind to callContext. Whatever a
// client sends under this name is overwritten.
const requestIDHeader = "Garra-Gateway-Request-Id"

func newRequestContexts() *requestContexts {
	return &requestContexts{ctxs: map[string]context.Context{}}
}

// bind records r's context for the duration of the request.
func (rc *requestContexts) bind(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc.mu.Lock()
		rc.seq++
		id := strconv.FormatUint(rc.seq, 10)
		rc.ctxs[id] = r.Context()
		rc.mu.Unlock()
		defer func() {
			rc.mu.Lock()
			delete(rc.ctxs, id)
			rc.mu.Unlock()
		}()
		r.Header.Set(requestIDHeader, id)
		next.ServeHTTP(w, r)
	})
}

// callContext returns ctx, also cancelled when the HTTP request the call
// arrived on ends.
func (rc *requestContexts) callContext(ctx context.Context, req *mcp.CallToolRequest) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if req == nil || req.Extra == nil || req.Extra.Header == nil {
		return ctx, cancel
	}
	rc.mu.Lock()
	rctx := rc.ctxs[req.Extra.Header.Get(requestIDHeader)]
	rc.mu.Unlock()
	if rctx == nil {
		return ctx, cancel
	}
	stop := context.AfterFunc(rctx, cancel)
	return ctx, func() { stop(); cancel() }
}
