package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
)

// statelessVersion is the first protocol revision without initialize or
// sessions: every request carries its version, client capabilities and
// client info in _meta, and over HTTP every POST stands alone.
const statelessVersion = "2026-07-28"

// JSON-RPC error codes the HTTP binding of the stateless revision maps to
// HTTP statuses.
const (
	codeMethodNotFound     = -32601
	codeInvalidParams      = -32602
	codeHeaderMismatch     = -32020
	codeMissingCapability  = -32021
	codeUnsupportedVersion = -32022
)

// The _meta keys the bridge reads or rewrites.
const (
	metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
	metaSubscriptionID  = "io.modelcontextprotocol/subscriptionId"
)

// isStateless reports whether a POST without Mcp-Session-Id belongs to the
// stateless revision: its MCP-Protocol-Version header says so, or its
// request names a version in _meta.
func isStateless(r *http.Request, msgs []*message) bool {
	if r.Header.Get(versionHeader) >= statelessVersion {
		return true
	}
	for _, m := range msgs {
		if m.Params.Meta.ProtocolVersion != nil {
			return true
		}
	}
	return false
}

// serveStateless hands one stateless POST to the bridge's stateless child.
//
// Over stdio one server process answers every request, but independent
// HTTP requests may reuse an id, even while another with that id is open (a
// subscriptions/listen stream stays open for long). So the child sees each
// request under an id of the bridge's, and the caller gets its own id back:
// in the response, and in the subscriptionId of a listen stream's
// notifications. Nothing else in a message is changed.
//
// What the HTTP binding adds is the bridge's, as the session handling is for
// the older revisions: MCP-Protocol-Version must match the request's _meta,
// and an error the child answers with gets the HTTP status the binding
// gives its code (404 for an unknown method, 400 for bad params, an
// unsupported version or a missing client capability).
func (b *bridge) serveStateless(w http.ResponseWriter, r *http.Request, msgs []*message, batch bool) {
	if batch {
		http.Error(w, "Bad Request: JSON-RPC batches are not part of protocol "+statelessVersion, http.StatusBadRequest)
		return
	}
	m := msgs[0]
	s, err := b.statelessSession()
	if err != nil {
		log.Printf("starting child: %v", err)
		writeJSONRPCError(w, http.StatusInternalServerError, -32603, "bridge could not start the server process: "+err.Error())
		return
	}
	if !m.isRequest() {
		if err := s.send(m.raw); err != nil {
			http.Error(w, "server process is gone", http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	header := r.Header.Get(versionHeader)
	var inMeta string
	if m.Params.Meta.ProtocolVersion != nil {
		_ = json.Unmarshal(m.Params.Meta.ProtocolVersion, &inMeta)
	}
	switch {
	case header == "":
		writeJSONRPCErrorFor(w, m.ID, http.StatusBadRequest, codeHeaderMismatch,
			fmt.Sprintf("%s header is required on a request whose _meta names %s", versionHeader, metaProtocolVersion))
		return
	case inMeta == "":
		// Over HTTP the header says which revision the request is of; over
		// stdio nothing does, and a request without the version reads as
		// one of the older revisions sent before initialize.
		writeJSONRPCErrorFor(w, m.ID, http.StatusBadRequest, codeInvalidParams,
			fmt.Sprintf("missing or invalid _meta field %q (%s is %s)", metaProtocolVersion, versionHeader, header))
		return
	case header != inMeta:
		writeJSONRPCErrorFor(w, m.ID, http.StatusBadRequest, codeHeaderMismatch,
			fmt.Sprintf("%s header %q does not match %s %s", versionHeader, header, metaProtocolVersion, m.Params.Meta.ProtocolVersion))
		return
	}

	s.mu.Lock()
	s.lastID++
	childID := fmt.Sprintf(`"bridge-%d"`, s.lastID)
	s.mu.Unlock()
	raw, err := setMember(m.raw, json.RawMessage(childID), "id")
	if err != nil {
		writeJSONRPCErrorFor(w, m.ID, http.StatusBadRequest, -32600, "Invalid Request: "+err.Error())
		return
	}
	var progress []string
	if m.Params.Meta.ProgressToken != nil {
		progress = []string{string(m.Params.Meta.ProgressToken)}
	}
	st := s.openStream([]string{childID}, progress)
	st.callerID = m.ID
	defer func() {
		answered := st.answered()
		s.closeStream(st)
		if !answered {
			// An HTTP client cancels by going away; over stdio the child
			// must be told, or a listen stream would stay open in it.
			s.cancel(childID)
		}
	}()
	if err := s.send(raw); err != nil {
		writeJSONRPCErrorFor(w, m.ID, http.StatusInternalServerError, -32603, "server process is gone")
		return
	}
	st.serveFirst(r.Context(), w, s.done)
}

// statelessSession returns the child that serves stateless requests,
// starting one when there is none or the last one has ended.
func (b *bridge) statelessSession() (*session, error) {
	b.mu.Lock()
	s := b.stateless
	b.mu.Unlock()
	if s != nil {
		select {
		case <-s.done:
		default:
			return s, nil
		}
	}
	s, err := b.newSession(false)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stateless != nil && b.stateless != s {
		select {
		case <-b.stateless.done:
		default:
			// Another POST started one first: use it, stop ours.
			go s.terminate()
			return b.stateless, nil
		}
	}
	b.stateless = s
	return s, nil
}

// cancel tells the child that the request it knows as id is abandoned.
func (s *session) cancel(id string) {
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"the HTTP client went away"}}`, id)
	_ = s.send([]byte(msg))
}

// answered reports whether the stream's last owed response has arrived.
func (st *stream) answered() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.final
}

// restoreID puts the caller's id back into the child's response.
func (st *stream) restoreID(msg []byte) []byte {
	out, err := setMember(msg, st.callerID, "id")
	if err != nil {
		return msg
	}
	return out
}

// restoreSubscriptionID puts the caller's id back where a listen stream's
// notification names its request.
func (st *stream) restoreSubscriptionID(msg []byte) []byte {
	out, err := setMember(msg, st.callerID, "params", "_meta", metaSubscriptionID)
	if err != nil {
		return msg
	}
	return out
}

// serveFirst answers a stateless request. When the child's first message
// for it is the response, the answer is that one JSON object, with the
// status the binding gives an error; when notifications come first (a
// progress report, a listen stream's acknowledgement), it is an SSE stream.
func (st *stream) serveFirst(ctx context.Context, w http.ResponseWriter, sessionDone <-chan struct{}) {
	for {
		st.mu.Lock()
		n, final := len(st.queue), st.final
		var only []byte
		if n == 1 && final {
			only = st.queue[0]
		}
		st.mu.Unlock()
		switch {
		case only != nil:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(errorStatus(only))
			_, _ = w.Write(only)
			return
		case n > 0:
			st.serve(ctx, w, sessionDone)
			return
		}
		select {
		case <-st.wakeup:
		case <-ctx.Done():
			return
		case <-sessionDone:
			if st.queued() == 0 {
				writeJSONRPCErrorFor(w, st.callerID, http.StatusInternalServerError, -32603, "the server process ended before answering")
				return
			}
		}
	}
}

// errorStatus is the HTTP status the stateless binding gives a response.
func errorStatus(msg []byte) int {
	var r struct {
		Error *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(msg, &r) != nil || r.Error == nil {
		return http.StatusOK
	}
	switch r.Error.Code {
	case codeMethodNotFound:
		return http.StatusNotFound
	case codeInvalidParams, codeHeaderMismatch, codeMissingCapability, codeUnsupportedVersion:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// setMember returns msg with the member at path (object keys, outermost
// first) set to v. Objects on the way are decoded and encoded again: their
// members keep their values but come out in sorted order.
func setMember(msg []byte, v json.RawMessage, path ...string) ([]byte, error) {
	if len(path) == 0 {
		return v, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(msg, &obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, errors.New("not a JSON object")
	}
	key := path[0]
	inner, ok := obj[key]
	if !ok && len(path) > 1 {
		return nil, fmt.Errorf("no member %q", key)
	}
	nv, err := setMember(inner, v, path[1:]...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	obj[key] = nv
	return json.Marshal(obj)
}
