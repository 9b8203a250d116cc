package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/garraia/garra/internal/mcpcancel"
)

// mcpBody is a /mcp request body as the layers before the SDK see it:
// read once, up to the cap, and parsed once, by whichever layer needs it
// first. The SDK still reads the whole body (what was read, then the
// rest) and applies its own cap (413).
type mcpBody struct {
	// whole: head is the entire body, within the cap. A body that is not
	// whole is not parsed; the SDK answers it.
	whole bool
	// batch is the number of messages of a JSON-RPC batch, 1 for anything
	// else (a single message, or a body the SDK will refuse as malformed).
	batch int
	shape rpcShape
}

type mcpBodyKey struct{}

// readBody returns r's body, read and parsed on the first call and kept in
// the request's context for the layers after it.
func readBody(r *http.Request) (*http.Request, *mcpBody) {
	if b, ok := r.Context().Value(mcpBodyKey{}).(*mcpBody); ok {
		return r, b
	}
	b := &mcpBody{batch: 1}
	if r.Body == nil {
		return r, b
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, MaxBodyBytes+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	b.whole = err == nil && len(head) <= MaxBodyBytes
	if b.whole {
		b.batch, b.shape = parseBody(head)
	}
	return r.WithContext(context.WithValue(r.Context(), mcpBodyKey{}, b)), b
}

// bodyIn is the body readBody read for r; an empty one without it.
func bodyIn(r *http.Request) *mcpBody {
	if b, ok := r.Context().Value(mcpBodyKey{}).(*mcpBody); ok {
		return b
	}
	return &mcpBody{batch: 1}
}

// parseBody reads the batch size and the shape of a body in one pass over
// its messages.
func parseBody(body []byte) (batch int, s rpcShape) {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return 1, s
	}
	if trimmed[0] != '[' {
		if req, ok := decodeRequest(body); ok && req.id.IsValid() {
			s.call, s.progress = req.id, hasProgressToken(req.params)
		} else if ok {
			s.cancelled = cancelledIn(req, s.cancelled)
		}
		return 1, s
	}
	var raws []json.RawMessage
	if json.Unmarshal(trimmed, &raws) != nil || len(raws) == 0 {
		return 1, s
	}
	for _, raw := range raws {
		if req, ok := decodeRequest(raw); ok {
			s.cancelled = cancelledIn(req, s.cancelled)
		}
	}
	return len(raws), s
}

// cancelledIn appends the id a notifications/cancelled names to ids.
func cancelledIn(req wireRequest, ids []jsonrpc.ID) []jsonrpc.ID {
	if req.method != "notifications/cancelled" {
		return ids
	}
	if id, ok := mcpcancel.CancelledID(req.params); ok {
		ids = append(ids, id)
	}
	return ids
}

func hasProgressToken(params json.RawMessage) bool {
	var p struct {
		Meta struct {
			ProgressToken any `json:"progressToken"`
		} `json:"_meta"`
	}
	return json.Unmarshal(params, &p) == nil && p.Meta.ProgressToken != nil
}

// wireRequest is what the shape needs of a JSON-RPC request.
type wireRequest struct {
	id     jsonrpc.ID
	method string
	params json.RawMessage
}

// decodeRequest decodes one message with the SDK's own decoder and
// reports whether it is a request, so that a message counts here exactly
// when the SDK will take it.
func decodeRequest(data []byte) (wireRequest, bool) {
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return wireRequest{}, false
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return wireRequest{}, false
	}
	return wireRequest{id: req.ID, method: req.Method, params: req.Params}, true
}
