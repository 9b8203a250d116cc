package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/garraia/garra/internal/mcptrace"
	"github.com/garraia/garra/internal/otelenv"
)

// RemoteOptions configures a Remote executor.
type RemoteOptions struct {
	// URL is the sandbox's MCP endpoint, e.g.
	// http://team-a-sandbox-badgood.agents.svc:8080/mcp.
	URL string
	// Token is the sandbox bearer token. It is sent only to URL's scheme
	// and host and never appears in an error.
	Token string
	// HTTPClient carries the requests. Nil means a client with no overall
	// timeout (each call is bounded by its context: bash may run for
	// minutes), a 10 s dial timeout and no proxy. Its Transport is wrapped
	// to add the bearer; redirects are never followed.
	HTTPClient *http.Client
	// TracerProvider makes each call a CLIENT span whose W3C trace
	// context travels to the sandbox in the traceparent header; nil =
	// untraced, and no header is added.
	TracerProvider trace.TracerProvider
	// ListTimeout bounds one Tools, all its pages; 0 = DefaultListTimeout.
	ListTimeout time.Duration
}

// Bounds of a sandbox's tools/list. A sandbox is a tenant's pod, not a
// trusted peer: one that answers with endless pages or huge tools must
// not grow the gateway without limit. garra's own sandbox lists a handful
// of tools in one page, each well under a kilobyte.
const (
	DefaultListTimeout        = 30 * time.Second
	MaxRemoteToolPages        = 32
	MaxRemoteTools            = 256
	MaxRemoteDescriptionBytes = 8 << 10
	MaxRemoteSchemaBytes      = 32 << 10
)

// ErrRemoteToolsTooLarge is wrapped by Tools' error when the sandbox's
// list passes one of the bounds above.
var ErrRemoteToolsTooLarge = errors.New("the sandbox's tool list exceeds the gateway's bounds")

// ErrRemoteUnauthorized is wrapped by Remote's errors when the sandbox
// answered 401: the token is wrong or missing.
var ErrRemoteUnauthorized = errors.New("the sandbox refused the bearer token")

// maxRemoteResponseBytes caps one HTTP response body from the sandbox. A
// tool result is at most DefaultMaxOutputBytes plus JSON framing; this is
// generous headroom, and a guard against a compromised pod flooding the
// gateway.
const maxRemoteResponseBytes = 16 << 20

// Remote runs the tools in a sandbox (`garra sandbox`) over MCP Streamable
// HTTP. It is immutable after NewRemote, safe for concurrent use, and holds
// nothing that needs closing: build one per agent run or share one.
//
// Connection: every Tools and Call opens its own MCP client session (one
// server/discover POST with the go-sdk's default protocol, 2026-07-28),
// makes its request (one POST) and closes the session. The sandbox is
// stateless, so a session carries nothing but the negotiated version, and
// a fresh one per operation means there is no broken session to detect,
// nothing to reconnect and no goroutine left behind by a Remote that is
// dropped without cleanup. The HTTP connections underneath are kept alive
// and shared by all Remotes built without an HTTPClient. Measured on
// loopback against a real sandbox (BenchmarkRemoteCall, 2 shared and busy
// cores): 1.2-2.5 ms per call with a kept session, 2.3-4.5 ms with a fresh
// one; the difference is one extra round trip in the cluster, nothing next
// to an LLM turn. A failed call is never retried (a bash command may have run).
//
// Errors: a transport or protocol failure is a Go error, never a Result;
// an unknown tool wraps ErrUnknownTool and a rejected token wraps
// ErrRemoteUnauthorized. Errors never contain the token. A tool refusal is
// a Result with IsError, as with Local. Arguments that are not valid JSON
// are answered locally as such a Result (the sandbox would refuse them the
// same way), so a model's malformed call does not end the run.
type Remote struct {
	endpoint string
	token    string
	client   *mcp.Client
	http     *http.Client
	tracer   trace.Tracer // nil = untraced
	server   []attribute.KeyValue
	listFor  time.Duration
}

var _ Executor = (*Remote)(nil)

// sharedTransport is the keep-alive pool of Remotes built without an
// HTTPClient.
var sharedTransport = sync.OnceValue(func() *http.Transport {
	return &http.Transport{
		Proxy:                 nil, // the sandbox is in-cluster; never send its token through a proxy
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:          64,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       60 * time.Second, // under the sandbox's 120 s IdleTimeout
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		ForceAttemptHTTP2:     true,
	}
})

// NewRemote builds a Remote. It does not connect; each call does.
func NewRemote(o RemoteOptions) *Remote {
	r := &Remote{
		endpoint: o.URL,
		token:    o.Token,
		client:   mcp.NewClient(&mcp.Implementation{Name: "garra-gateway", Version: "1"}, nil),
		listFor:  o.ListTimeout,
	}
	if r.listFor <= 0 {
		r.listFor = DefaultListTimeout
	}
	base := o.HTTPClient
	if base == nil {
		// No overall timeout: each call is bounded by its context.
		base = &http.Client{Transport: sharedTransport()}
	}
	inner := base.Transport
	if inner == nil {
		inner = http.DefaultTransport
	}
	var target *url.URL
	if u, err := url.Parse(o.URL); err == nil {
		target = u
	}
	if o.TracerProvider != nil {
		r.tracer = o.TracerProvider.Tracer(otelenv.ScopeName)
		if target != nil {
			r.server = []attribute.KeyValue{semconv.ServerAddress(target.Hostname())}
		}
	}
	hc := *base
	hc.Transport = &bearerTransport{inner: inner, token: o.Token, target: target, traced: r.tracer != nil}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error {
		return errors.New("the sandbox answered with a redirect; redirects are not followed")
	}
	r.http = &hc
	return r
}

// Tools lists the sandbox's tools in the order it gives them, within
// ListTimeout and the bounds above (ErrRemoteToolsTooLarge beyond them).
func (r *Remote) Tools(ctx context.Context) (_ []Tool, err error) {
	if r.tracer != nil {
		var span trace.Span
		ctx, span = mcptrace.StartClient(ctx, r.tracer, "tools/list", "", r.server...)
		defer func() { mcptrace.EndClient(span, remoteErrorType(err), false) }()
	}
	ctx, cancel := context.WithTimeout(ctx, r.listFor)
	defer cancel()
	cs, err := r.connect(ctx)
	if err != nil {
		return nil, r.wrap("list tools", err)
	}
	ok := false
	defer func() { closeSession(cs, ok) }()
	var out []Tool
	params := &mcp.ListToolsParams{}
	for page := 1; ; page++ {
		if page > MaxRemoteToolPages {
			return nil, r.wrap("list tools", fmt.Errorf("%w: more than %d pages", ErrRemoteToolsTooLarge, MaxRemoteToolPages))
		}
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, r.wrap("list tools", err)
		}
		if len(out)+len(res.Tools) > MaxRemoteTools {
			return nil, r.wrap("list tools", fmt.Errorf("%w: more than %d tools", ErrRemoteToolsTooLarge, MaxRemoteTools))
		}
		for _, t := range res.Tools {
			tool, err := boundedTool(t)
			if err != nil {
				return nil, r.wrap("list tools", err)
			}
			out = append(out, tool)
		}
		if res.NextCursor == "" {
			break
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	ok = true
	return out, nil
}

// maxToolNameBytes is MCP's own limit on a tool name.
const maxToolNameBytes = 128

// boundedTool copies one listed tool, refusing one whose description or
// input schema passes its bound.
func boundedTool(t *mcp.Tool) (Tool, error) {
	name := t.Name
	if len(name) > maxToolNameBytes {
		return Tool{}, fmt.Errorf("%w: a tool name of %d bytes, more than %d", ErrRemoteToolsTooLarge, len(name), maxToolNameBytes)
	}
	if len(t.Description) > MaxRemoteDescriptionBytes {
		return Tool{}, fmt.Errorf("%w: tool %q: description of %d bytes, more than %d", ErrRemoteToolsTooLarge, name, len(t.Description), MaxRemoteDescriptionBytes)
	}
	schema, err := json.Marshal(t.InputSchema)
	if err != nil {
		return Tool{}, fmt.Errorf("tool %q: input schema: %w", name, err)
	}
	if len(schema) > MaxRemoteSchemaBytes {
		return Tool{}, fmt.Errorf("%w: tool %q: input schema of %d bytes, more than %d", ErrRemoteToolsTooLarge, name, len(schema), MaxRemoteSchemaBytes)
	}
	return Tool{Name: t.Name, Description: t.Description, InputSchema: schema}, nil
}

// Call runs one tool in the sandbox.
func (r *Remote) Call(ctx context.Context, name string, args json.RawMessage) (res Result, err error) {
	if r.tracer != nil {
		var span trace.Span
		ctx, span = mcptrace.StartClient(ctx, r.tracer, "tools/call", name, r.server...)
		defer func() { mcptrace.EndClient(span, remoteErrorType(err), res.IsError) }()
	}
	return r.call(ctx, name, args)
}

func (r *Remote) call(ctx context.Context, name string, args json.RawMessage) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	var arguments any = map[string]any{}
	if len(strings.TrimSpace(string(args))) > 0 {
		if !json.Valid(args) {
			return argsError(name, errors.New("arguments: invalid JSON")), nil
		}
		arguments = args
	}
	cs, err := r.connect(ctx)
	if err != nil {
		return Result{}, r.wrap("call "+name, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: arguments})
	closeSession(cs, err == nil)
	if err != nil {
		var werr *jsonrpc.Error
		if errors.As(err, &werr) && werr.Code == jsonrpc.CodeInvalidParams && strings.HasPrefix(werr.Message, "unknown tool") {
			return Result{}, fmt.Errorf("%w: %q", ErrUnknownTool, name)
		}
		if ctx.Err() != nil {
			return Result{}, ctx.Err()
		}
		return Result{}, r.wrap("call "+name, err)
	}
	var b strings.Builder
	for i, c := range res.Content {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch c := c.(type) {
		case *mcp.TextContent:
			b.WriteString(c.Text)
		default:
			b.WriteString("[non-text content omitted]")
		}
	}
	out := b.String()
	// Backstop, as in Local.Call: the sandbox caps its own output.
	if len(out) > DefaultMaxOutputBytes+256 {
		out = capOutput(out, DefaultMaxOutputBytes)
	}
	return Result{Output: out, IsError: res.IsError}, nil
}

// ReadResource reads one text resource of the sandbox (its toolchain,
// say) and returns its text; a resource with several contents or none is
// an error.
func (r *Remote) ReadResource(ctx context.Context, uri string) (_ string, err error) {
	if r.tracer != nil {
		var span trace.Span
		ctx, span = mcptrace.StartClient(ctx, r.tracer, "resources/read", "", append(r.server, semconv.McpResourceURI(uri))...)
		defer func() { mcptrace.EndClient(span, remoteErrorType(err), false) }()
	}
	cs, err := r.connect(ctx)
	if err != nil {
		return "", r.wrap("read "+uri, err)
	}
	res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
	closeSession(cs, err == nil)
	switch {
	case err != nil && ctx.Err() != nil:
		return "", ctx.Err()
	case err != nil:
		return "", r.wrap("read "+uri, err)
	case len(res.Contents) != 1 || res.Contents[0] == nil:
		return "", r.wrap("read "+uri, fmt.Errorf("%d contents, want one", len(res.Contents)))
	}
	return res.Contents[0].Text, nil
}

// connect opens a session. It returns when ctx ends even if the go-sdk's
// Connect does not: when the handshake is cut by ctx, the SDK closes the
// half-made session, which waits up to 5 s for its best-effort
// notifications/cancelled to reach a possibly hung sandbox.
func (r *Remote) connect(ctx context.Context) (*mcp.ClientSession, error) {
	if r.endpoint == "" {
		return nil, errors.New("no sandbox URL configured")
	}
	transport := &mcp.StreamableClientTransport{
		Endpoint:   r.endpoint,
		HTTPClient: r.http,
		// The sandbox is stateless: nothing to listen for, nothing to
		// resume, and a failed call must not be retried behind our back.
		DisableStandaloneSSE: true,
		MaxRetries:           -1,
	}
	type dialed struct {
		cs  *mcp.ClientSession
		err error
	}
	ch := make(chan dialed, 1)
	go func() {
		cs, err := r.client.Connect(ctx, transport, nil)
		ch <- dialed{cs, err}
	}()
	select {
	case d := <-ch:
		return d.cs, d.err
	case <-ctx.Done():
		go func() {
			if d := <-ch; d.cs != nil {
				_ = d.cs.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// closeSession ends a session: inline after a clean operation (quick: no
// DELETE for a stateless server), in the background after a failure,
// where the SDK may still be delivering a cancellation notification to an
// unresponsive sandbox.
func closeSession(cs *mcp.ClientSession, clean bool) {
	if clean {
		_ = cs.Close()
		return
	}
	go func() { _ = cs.Close() }()
}

// remoteErrorType is the error.type of a failed sandbox call: a word,
// never the message.
func remoteErrorType(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, ErrUnknownTool):
		return "unknown_tool"
	case errors.Is(err, ErrRemoteUnauthorized):
		return "unauthorized"
	}
	return "sandbox_error"
}

// wrap prefixes err and scrubs the token from its message.
func (r *Remote) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return &remoteError{op: op, err: err, token: r.token}
}

// remoteError names the operation and never prints the token; errors.Is
// and errors.As see the cause.
type remoteError struct {
	op    string
	err   error
	token string
}

func (e *remoteError) Error() string {
	msg := "sandbox: " + e.op + ": " + e.err.Error()
	if e.token != "" {
		msg = strings.ReplaceAll(msg, e.token, "[REDACTED]")
	}
	return msg
}

func (e *remoteError) Unwrap() error { return e.err }

// bearerTransport adds the bearer token to requests for the sandbox's own
// scheme and host (never to anything else), turns 401 into
// ErrRemoteUnauthorized and caps response bodies.
type bearerTransport struct {
	inner  http.RoundTripper
	token  string
	target *url.URL
	traced bool // send the W3C trace context too
}

func (t *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.target != nil && strings.EqualFold(req.URL.Scheme, t.target.Scheme) && strings.EqualFold(req.URL.Host, t.target.Host) {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+t.token)
		if t.traced {
			mcptrace.Inject(req.Context(), req.Header)
		}
	}
	resp, err := t.inner.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		_ = resp.Body.Close()
		return nil, fmt.Errorf("%w (HTTP %d)", ErrRemoteUnauthorized, resp.StatusCode)
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: maxRemoteResponseBytes}
	return resp, nil
}

// cappedBody fails a read past the cap instead of silently truncating.
type cappedBody struct {
	io.ReadCloser
	left int64
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		// One more byte would exceed the cap: check whether there is one.
		var one [1]byte
		n, err := c.ReadCloser.Read(one[:])
		if n > 0 {
			return 0, fmt.Errorf("sandbox response exceeds %d bytes", maxRemoteResponseBytes)
		}
		return 0, err
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.ReadCloser.Read(p)
	c.left -= int64(n)
	return n, err
}
