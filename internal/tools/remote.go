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
}

// ErrRemoteUnauthorized is wrapped by Remote's errors when the sandbox
// answered 401: the token is wrong or missing.
var ErrRemoteUnauthorized = errors.New("the sandbox refused the bearer token")

// maxRemoteResponseBytes caps one HTTP response body from the sandbox. A
// tool result is at most DefaultMaxOutputBytes plus JSON framing; this is
// generous headroom, and a guard against a compromised pod flooding the
// gateway.
const maxRemoteResponseBytes = 16 << 20

// Remote runs the tools in a sandbox (`garra sandbox`) over MCP Streamable
// HTTP. It is safe for concurrent use.
//
// Connection: the first Tools or Call connects (one server/discover round
// trip with the go-sdk's default protocol, 2026-07-28) and the session is
// kept; later calls cost one POST each on a kept-alive HTTP connection.
// The sandbox is stateless, so the "session" is only the negotiated
// protocol version: when a request fails below the MCP layer (network,
// HTTP status, malformed response) the session is dropped and the next
// call connects afresh. A failed call is never retried (a bash command may
// have run). JSON-RPC errors the sandbox answered with (unknown tool) keep
// the session.
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

	dialing chan struct{} // held while connecting
	mu      sync.Mutex    // guards session
	session *mcp.ClientSession
}

var _ Executor = (*Remote)(nil)

// NewRemote builds a Remote. It does not connect; the first call does.
func NewRemote(o RemoteOptions) *Remote {
	r := &Remote{
		endpoint: o.URL,
		token:    o.Token,
		dialing:  make(chan struct{}, 1),
		client:   mcp.NewClient(&mcp.Implementation{Name: "garra-gateway", Version: "1"}, nil),
	}
	base := o.HTTPClient
	if base == nil {
		base = &http.Client{Transport: &http.Transport{
			Proxy:                 nil, // the sandbox is in-cluster; never send its token through a proxy
			DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConns:          16,
			MaxIdleConnsPerHost:   4,
			IdleConnTimeout:       60 * time.Second, // under the sandbox's 120 s IdleTimeout
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
			ForceAttemptHTTP2:     true,
		}}
	}
	inner := base.Transport
	if inner == nil {
		inner = http.DefaultTransport
	}
	var target *url.URL
	if u, err := url.Parse(o.URL); err == nil {
		target = u
	}
	hc := *base
	hc.Transport = &bearerTransport{inner: inner, token: o.Token, target: target}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error {
		return errors.New("the sandbox answered with a redirect; redirects are not followed")
	}
	r.http = &hc
	return r
}

// Tools lists the sandbox's tools in the order it gives them.
func (r *Remote) Tools(ctx context.Context) ([]Tool, error) {
	cs, err := r.connect(ctx)
	if err != nil {
		return nil, r.wrap("list tools", err)
	}
	var out []Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			r.drop(cs, err)
			return nil, r.wrap("list tools", err)
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, r.wrap("list tools", fmt.Errorf("tool %q: input schema: %v", t.Name, err))
		}
		out = append(out, Tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return out, nil
}

// Call runs one tool in the sandbox.
func (r *Remote) Call(ctx context.Context, name string, args json.RawMessage) (Result, error) {
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
	if err != nil {
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			if werr.Code == jsonrpc.CodeInvalidParams && strings.HasPrefix(werr.Message, "unknown tool") {
				return Result{}, fmt.Errorf("%w: %q", ErrUnknownTool, name)
			}
		} else {
			r.drop(cs, err)
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

// Close ends the current session, if any. The Remote stays usable: the
// next call connects again.
func (r *Remote) Close() error {
	r.mu.Lock()
	cs := r.session
	r.session = nil
	r.mu.Unlock()
	if cs != nil {
		return cs.Close()
	}
	return nil
}

// connect returns the current session, connecting if there is none.
// Connecting is serialized (concurrent first calls share one session) but
// waiting for it honours ctx.
func (r *Remote) connect(ctx context.Context) (*mcp.ClientSession, error) {
	if cs := r.current(); cs != nil {
		return cs, nil
	}
	select {
	case r.dialing <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-r.dialing }()
	if cs := r.current(); cs != nil {
		return cs, nil
	}
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
	cs, err := r.client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.session = cs
	r.mu.Unlock()
	return cs, nil
}

func (r *Remote) current() *mcp.ClientSession {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.session
}

// drop forgets cs after a failure below the MCP layer, so the next call
// reconnects. A JSON-RPC error from the server keeps the session.
func (r *Remote) drop(cs *mcp.ClientSession, err error) {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		return
	}
	r.mu.Lock()
	if r.session == cs {
		r.session = nil
	}
	r.mu.Unlock()
	go func() { _ = cs.Close() }()
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
}

func (t *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.target != nil && strings.EqualFold(req.URL.Scheme, t.target.Scheme) && strings.EqualFold(req.URL.Host, t.target.Host) {
		req = req.Clone(req.Context())
		req.Header.Set("Authorization", "Bearer "+t.token)
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
