// Package mcpstdio is the stdio transport of `garra mcp-server`: the
// newline-delimited JSON-RPC of an MCP host over stdin and stdout, which
// answers lines that are not JSON-RPC and holds end of input until every
// request has its reply. The server it carries is mcpserver's, built for
// the local user.
package mcpstdio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/mcpcancel"
)

// Transport is the stdio transport of `garra mcp-server`: newline-delimited
// JSON-RPC over In and Out, like the SDK's StdioTransport, with two changes
// an MCP host (or a shell pipe) relies on:
//
//   - A line that is not JSON gets a -32700 parse error, and a JSON line
//     that is not a JSON-RPC message a -32600 invalid request, both with id
//     null unless the line carried a usable id. The server then reads the
//     next line. The SDK on its own ends the session at the first such line.
//   - A request the client cancels (notifications/cancelled) while it runs
//     gets no response, as MCP asks; the SDK would still send one.
//   - End of input is passed on only once every request read so far has
//     been answered. The SDK on its own stops writing replies as soon as it
//     sees end of input, so `echo '{…"initialize"…}' | garra mcp-server`
//     printed its reply only when the handler won that race.
//
// Out receives the SDK's messages and the error replies through one mutex,
// one whole line per Write, so lines never interleave and stdout stays
// JSON-RPC only.
type Transport struct {
	In  io.Reader
	Out io.Writer
	// MaxLineLength bounds one input line in bytes; 0 means
	// mcp.DefaultMaxLineLength. A longer line is discarded and answered with
	// -32600.
	MaxLineLength int
}

// Connect implements mcp.Transport.
func (t *Transport) Connect(ctx context.Context) (mcp.Connection, error) {
	limit := t.MaxLineLength
	if limit <= 0 {
		limit = mcp.DefaultMaxLineLength
	}
	pending := newInflight()
	out := &replyWriter{w: t.Out, pending: pending}
	in := &lineFilter{
		src:     bufio.NewReaderSize(t.In, 64<<10),
		raw:     t.In,
		limit:   limit,
		out:     out,
		pending: pending,
		closed:  make(chan struct{}),
	}
	// Lines reach the SDK already bounded and validated, so its own cap is
	// off: it counts read-ahead bytes, not lines.
	return (&mcp.IOTransport{Reader: in, Writer: out, MaxLineLength: -1}).Connect(ctx)
}

// Error messages of the replies the filter writes itself (the parse error's
// is errkinds.RPCParseError's). They never quote the input: a line may hold
// a secret pasted by mistake.
const (
	msgInvalidRequest = "Invalid Request: the line is not a JSON-RPC 2.0 message"
	msgLineTooLong    = "Invalid Request: the line is longer than the server accepts"
	msgEmptyBatch     = "Invalid Request: empty batch"
)

// inflight counts the requests handed to the SDK that still await a reply.
type inflight struct {
	mu  sync.Mutex
	ids map[jsonrpc.ID]int
	n   int
	// cancelled are requests the client cancelled while awaited: MCP says
	// a cancelled request gets no response, and the SDK still writes one.
	cancelled map[jsonrpc.ID]int
	broken    bool          // Out failed: no reply can come any more
	changed   chan struct{} // closed and replaced whenever n or broken changes
}

func newInflight() *inflight {
	return &inflight{ids: map[jsonrpc.ID]int{}, cancelled: map[jsonrpc.ID]int{}, changed: make(chan struct{})}
}

// cancel settles an awaited id as cancelled, so that its reply is dropped.
func (f *inflight) cancel(id jsonrpc.ID) {
	f.mu.Lock()
	_, awaited := f.ids[id]
	if awaited {
		f.cancelled[id]++
	}
	f.mu.Unlock()
	f.done(id)
}

// swallow reports whether a reply to id is one to drop, consuming the mark.
func (f *inflight) swallow(id jsonrpc.ID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.cancelled[id]
	switch {
	case !ok:
		return false
	case c == 1:
		delete(f.cancelled, id)
	default:
		f.cancelled[id] = c - 1
	}
	return true
}

func (f *inflight) notify() {
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *inflight) add(id jsonrpc.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ids[id]++
	f.n++
	f.notify()
}

// done records a reply (or a cancellation) for id; an id not awaited is
// ignored, so a late reply to a cancelled request cannot go negative.
func (f *inflight) done(id jsonrpc.ID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.ids[id]
	if !ok {
		return
	}
	if c == 1 {
		delete(f.ids, id)
	} else {
		f.ids[id] = c - 1
	}
	f.n--
	f.notify()
}

func (f *inflight) fail() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.broken = true
	f.notify()
}

// wait returns when nothing is awaited any more, Out has failed, or stop
// is closed.
func (f *inflight) wait(stop <-chan struct{}) {
	for {
		f.mu.Lock()
		if f.n == 0 || f.broken {
			f.mu.Unlock()
			return
		}
		ch := f.changed
		f.mu.Unlock()
		select {
		case <-ch:
		case <-stop:
			return
		}
	}
}

// replyWriter is Out shared by the SDK and the filter. Every Write is one
// whole message line; replies are counted after they are written, so end
// of input is released only once the bytes are out.
type replyWriter struct {
	mu      sync.Mutex
	w       io.Writer
	pending *inflight
}

func (r *replyWriter) Write(p []byte) (int, error) {
	line := p
	if msgs := decodeLine(p); len(msgs) == 1 {
		if resp, ok := msgs[0].(*jsonrpc.Response); ok && r.pending.swallow(resp.ID) {
			return len(p), nil // the reply to a cancelled request
		}
		line = withErrorCode(msgs[0], p)
	}
	r.mu.Lock()
	n, err := r.w.Write(line)
	if err == nil {
		n = len(p) // the SDK wrote p; what went out may differ in length
	}
	r.mu.Unlock()
	if err != nil {
		r.pending.fail()
		return n, err
	}
	for _, msg := range decodeLine(p) {
		if resp, ok := msg.(*jsonrpc.Response); ok {
			r.pending.done(resp.ID)
		}
	}
	return n, nil
}

// notInitialized is how the SDK words a call before initialize, which it
// answers with an error lacking a code (0 on the wire).
const notInitialized = "is invalid during session initialization"

// withErrorCode gives that error the code of an invalid request and says
// what to send first; any other line is returned as it is.
func withErrorCode(msg jsonrpc.Message, line []byte) []byte {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error == nil {
		return line
	}
	var werr *jsonrpc.Error
	if errors.As(resp.Error, &werr) && werr.Code != 0 || !strings.Contains(resp.Error.Error(), notInitialized) {
		return line
	}
	resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest,
		Message: "Invalid Request: " + resp.Error.Error() + ": send initialize first (or, from protocol 2026-07-28, the version in each request's _meta)"}
	data, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		return line
	}
	return append(data, '\n')
}

// Close leaves Out open: the process owns its stdout.
func (r *replyWriter) Close() error { return nil }

// errorReply is a JSON-RPC error response written by hand: the SDK's
// encoder omits a null id, which an error about an unreadable request must
// carry.
type errorReply struct {
	JSONRPC string         `json:"jsonrpc"`
	ID      any            `json:"id"`
	Error   *jsonrpc.Error `json:"error"`
}

// writeError answers a line the SDK never sees.
func (r *replyWriter) writeError(id jsonrpc.ID, code int64, msg string) error {
	data, err := json.Marshal(errorReply{JSONRPC: "2.0", ID: id.Raw(), Error: &jsonrpc.Error{Code: code, Message: msg}})
	if err != nil {
		return fmt.Errorf("encode error reply: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := r.w.Write(append(data, '\n')); err != nil {
		r.pending.fail()
		return err
	}
	return nil
}

// lineFilter is what the SDK reads instead of In: valid JSON-RPC lines
// only, and end of input once the requests it passed on are answered.
type lineFilter struct {
	src     *bufio.Reader
	raw     io.Reader // In, closed with the connection when it is a Closer
	limit   int
	out     *replyWriter
	pending *inflight

	buf []byte // the accepted line being handed out
	err error  // the input's terminal error, returned after buf drains

	closeOnce sync.Once
	closed    chan struct{}
}

func (l *lineFilter) Read(p []byte) (int, error) {
	for len(l.buf) == 0 {
		if l.err != nil {
			if errors.Is(l.err, io.EOF) {
				// Replies still owed go out before the SDK learns the
				// input is over; it stops writing once it does.
				l.pending.wait(l.closed)
			}
			return 0, l.err
		}
		line, tooLong, err := l.readLine()
		l.err = err
		if tooLong {
			if werr := l.out.writeError(jsonrpc.ID{}, jsonrpc.CodeInvalidRequest, msgLineTooLong); werr != nil {
				return 0, werr
			}
			continue
		}
		msg, werr := l.accept(line)
		if werr != nil {
			return 0, werr
		}
		if msg != nil {
			l.buf = append(msg, '\n')
		}
	}
	n := copy(p, l.buf)
	l.buf = l.buf[n:]
	return n, nil
}

// readLine returns the next line, or tooLong when it exceeded the limit
// (the rest of it is consumed and dropped).
func (l *lineFilter) readLine() (line []byte, tooLong bool, err error) {
	for {
		chunk, err := l.src.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > l.limit+2 { // room for \r\n
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		select {
		case <-l.closed:
			return nil, false, io.EOF
		default:
		}
		return line, tooLong, err
	}
}

// accept validates one line and returns the message to pass on to the
// SDK, or nil when the line has been answered (or was blank). Requests
// passed on are counted as awaiting a reply; a cancellation notification
// settles the request it names, since a cancelled request may get no
// reply.
func (l *lineFilter) accept(line []byte) ([]byte, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, nil
	}
	if !json.Valid(line) {
		return nil, l.out.writeError(jsonrpc.ID{}, jsonrpc.CodeParseError, errkinds.RPCParseError.Message)
	}
	msgs, code, msg := validate(line)
	if code != 0 {
		return nil, l.out.writeError(lineID(line), code, msg)
	}
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok {
			continue
		}
		if req.IsCall() {
			l.pending.add(req.ID)
		} else if req.Method == "notifications/cancelled" {
			if id, ok := mcpcancel.CancelledID(req.Params); ok {
				l.pending.cancel(id)
			}
		}
	}
	return line, nil
}

// Close ends the connection: a Read waiting for replies returns, and In is
// closed when it can be, so the SDK's reader is not left blocked on it.
func (l *lineFilter) Close() error {
	var err error
	l.closeOnce.Do(func() {
		close(l.closed)
		if c, ok := l.raw.(io.Closer); ok {
			err = c.Close()
		}
	})
	return err
}

// validate decodes a JSON line as one JSON-RPC message or a batch of them,
// as the SDK will. On failure it returns the error code and message to
// answer with.
func validate(line []byte) ([]jsonrpc.Message, int64, string) {
	if line[0] != '[' {
		m, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			return nil, jsonrpc.CodeInvalidRequest, msgInvalidRequest
		}
		return []jsonrpc.Message{m}, 0, ""
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(line, &raws); err != nil {
		return nil, jsonrpc.CodeInvalidRequest, msgInvalidRequest
	}
	if len(raws) == 0 {
		return nil, jsonrpc.CodeInvalidRequest, msgEmptyBatch
	}
	msgs := make([]jsonrpc.Message, 0, len(raws))
	for _, r := range raws {
		m, err := jsonrpc.DecodeMessage(r)
		if err != nil {
			return nil, jsonrpc.CodeInvalidRequest, msgInvalidRequest
		}
		msgs = append(msgs, m)
	}
	return msgs, 0, ""
}

// decodeLine decodes what the SDK wrote: one message or a batch. Anything
// else yields nothing (the SDK only writes what it encoded).
func decodeLine(p []byte) []jsonrpc.Message {
	p = bytes.TrimSpace(p)
	if len(p) == 0 {
		return nil
	}
	msgs, code, _ := validate(p)
	if code != 0 {
		return nil
	}
	return msgs
}

// lineID is the id of an invalid request when it has a usable one (a
// string or a number), else the null id.
func lineID(line []byte) jsonrpc.ID {
	var v struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(line, &v) != nil {
		return jsonrpc.ID{}
	}
	id, err := jsonrpc.MakeID(v.ID)
	if err != nil {
		return jsonrpc.ID{}
	}
	return id
}
