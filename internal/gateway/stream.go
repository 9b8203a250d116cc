package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

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

// shapeOf reads a body's shape. A body that does not decode has none: the
// SDK answers it.
func shapeOf(body []byte) rpcShape {
	var s rpcShape
	trimmed := strings.TrimLeft(string(body), " \t\r\n")
	if trimmed == "" {
		return s
	}
	var raws []json.RawMessage
	if trimmed[0] == '[' {
		if json.Unmarshal(body, &raws) != nil {
			return s
		}
	} else {
		raws = []json.RawMessage{body}
	}
	for _, raw := range raws {
		msg, err := jsonrpc.DecodeMessage(raw)
		if err != nil {
			continue
		}
		req, ok := msg.(*jsonrpc.Request)
		switch {
		case !ok:
		case req.IsCall() && len(raws) == 1 && trimmed[0] != '[':
			s.call, s.progress = req.ID, hasProgressToken(req.Params)
		case req.Method == "notifications/cancelled":
			if id, ok := mcpcancel.CancelledID(req.Params); ok {
				s.cancelled = append(s.cancelled, id)
			}
		}
	}
	return s
}

func hasProgressToken(params json.RawMessage) bool {
	var p struct {
		Meta struct {
			ProgressToken any `json:"progressToken"`
		} `json:"_meta"`
	}
	return json.Unmarshal(params, &p) == nil && p.Meta.ProgressToken != nil
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

type rpcShapeKey struct{}

// readShape reads the body's shape once, for the layers after it.
func readShape(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r, head, whole := peekBody(r)
		var s rpcShape
		if whole {
			s = shapeOf(head)
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), rpcShapeKey{}, s)))
	})
}

// shapeIn is the shape readShape found; none without it.
func shapeIn(r *http.Request) rpcShape {
	s, _ := r.Context().Value(rpcShapeKey{}).(rpcShape)
	return s
}

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
