package gateway

import (
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/garraia/garra/internal/mcpcancel"
)

// rpcShape is what the layers before the SDK need to know of a /mcp body.
type rpcShape struct {
	// call is the id of a body that is one request (not a batch); the
	// zero ID otherwise.
	call jsonrpc.ID
	// progress: that request carries a progressToken.
	progress bool
	// cancelled are the ids the body's notifications/cancelled name.
	cancelled []jsonrpc.ID
}

// wantsStream decides the response's form: an event stream when the
// request asked for progress and the client accepts text/event-stream, so
// its notifications can travel before the result; JSON otherwise, the
// form every client reads.
func wantsStream(accept []string, s rpcShape) bool {
	_, sse := acceptedTypes(accept)
	return s.progress && sse
}

// callKey files a caller's request for cancellation: a caller can cancel
// only its own calls. 7 and "7" are different ids.
func callKey(caller string, id jsonrpc.ID) string {
	if !id.IsValid() {
		return ""
	}
	return fmt.Sprintf("%s\x00%#v", caller, id.Raw())
}

// readShape reads and parses the body, if no layer before it did, for
// the layers after it.
func readShape(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, _ = readBody(r)
		next.ServeHTTP(w, r)
	})
}

// shapeIn is the shape readBody found; none without it.
func shapeIn(r *http.Request) rpcShape { return bodyIn(r).shape }

// cancelNotices makes a notifications/cancelled that arrives in its own
// POST cancel the call it names, when that call is the caller's and the
// only one in flight under its id. The SDK alone cannot: in a stateless
// server each POST is a session of its own. The notification then goes on
// to the SDK, which answers 202.
func (g *policy) cancelNotices(reqs *mcpcancel.Requests, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c, ok := callerFrom(r.Context()); ok {
			for _, id := range shapeIn(r).cancelled {
				if !reqs.Cancel(callKey(c.Name, id)) {
					g.log.Info("notifications/cancelled matched no single call in flight", "caller", c.Name)
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// requestKey is the cancellation key of r's call (see callKey).
func requestKey(r *http.Request) string {
	c, ok := callerFrom(r.Context())
	if !ok {
		return ""
	}
	return callKey(c.Name, shapeIn(r).call)
}

// streamOrJSON serves a request with sse when wantsStream says so, with
// asJSON otherwise.
func streamOrJSON(asJSON, sse http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !wantsStream(r.Header.Values("Accept"), shapeIn(r)) {
			asJSON.ServeHTTP(w, r)
			return
		}
		// Handler's unbuffered.SSE marks the stream for proxies.
		sse.ServeHTTP(w, r)
	})
}
