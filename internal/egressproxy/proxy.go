package egressproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/garraia/garra/internal/errkinds"
	"github.com/garraia/garra/internal/tools"
)

// HeaderRefused names the kind of a refusal in the proxy's answer.
const HeaderRefused = "Garra-Egress-Refused"

// dialTimeout bounds connecting to an upstream (DNS included).
const dialTimeout = 15 * time.Second

// handshakeTimeout bounds the sandbox's TLS handshake with an
// intercepting connection.
const handshakeTimeout = 15 * time.Second

// tunnelLinger is how long a tunnel waits for the client's last bytes
// once the upstream has closed.
const tunnelLinger = 30 * time.Second

// Options configure a Proxy.
type Options struct {
	// Policy returns the policy in force; it is asked once per CONNECT and
	// once per request, so a reload applies to the next request even on a
	// kept-alive intercepted connection.
	Policy func() *Policy
	// Dial connects upward (the gateway's egress guard); required.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// RootCAs verifies upstreams; nil is the system's roots. Tests pass
	// their own server's; verification is never turned off.
	RootCAs *x509.CertPool
	// Observe receives each use, after it ends (audit, metrics); nil
	// drops them.
	Observe func(Use)
	// TracerProvider makes a span per use; nil is no tracing.
	TracerProvider trace.TracerProvider
	// Logger gets the causes the sandbox is not told (upstream errors).
	Logger *slog.Logger
}

// Use is one CONNECT tunnel or one request, for the audit line, the span
// and the metric. It never holds a credential's value nor the path asked
// for; Host is the host asked for (Allowed says whether it passed the
// allowlist, else it is caller-chosen text).
type Use struct {
	Orchestrator string // "" when the caller was not authenticated
	Credential   string // the credential injected (or refused for)
	Host         string
	Allowed      bool
	Method       string
	PathPrefix   string
	Action       Action
	Kind         errkinds.Kind // the refusal's, or ""
	Status       int           // the status the sandbox got (200 for a tunnel)
	BytesUp      int64
	BytesDown    int64
	Duration     time.Duration
}

// Proxy is the egress proxy; it is an http.Handler (serve it with Serve).
type Proxy struct {
	o        Options
	upstream *http.Transport
	tracer   trace.Tracer
	log      *slog.Logger

	mu     sync.Mutex
	conns  map[net.Conn]struct{} // hijacked: tunnels and intercepted sessions
	closed bool
}

// New builds a proxy.
func New(o Options) *Proxy {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	tp := o.TracerProvider
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	p := &Proxy{o: o, tracer: tp.Tracer("github.com/garraia/garra/internal/egressproxy"), log: o.Logger, conns: map[net.Conn]struct{}{}}
	p.upstream = &http.Transport{
		// Never an environment proxy: the guard must see the destination.
		Proxy:       nil,
		DialContext: o.Dial,
		TLSClientConfig: &tls.Config{
			RootCAs:    o.RootCAs,
			MinVersion: tls.VersionTLS12,
		},
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          256,
		MaxIdleConnsPerHost:   32,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	return p
}

// Serve serves the proxy on ln until ctx ends, then stops accepting,
// gives requests in flight a few seconds and closes every tunnel.
func (p *Proxy) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(p.log.Handler(), slog.LevelDebug)}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	p.closeAll()
	p.upstream.CloseIdleConnections()
	return nil
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// ServeHTTP authenticates the sandbox and serves its CONNECT or http://
// request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	proxyAuth := r.Header.Get("Proxy-Authorization")
	pol := p.o.Policy()
	rules, err := pol.Authenticate(proxyAuth)
	if err != nil {
		w.Header().Set("Proxy-Authenticate", `Basic realm="garra egress"`)
		u := Use{Host: hostOnly(r), Method: methodLabel(r.Method), Duration: time.Since(start)}
		p.refuse(r.Context(), w, &u, Decision{Kind: errkinds.EgressProxyAuth, Rule: "no Proxy-Authorization of an orchestrator's sandbox"})
		return
	}
	switch {
	case r.Method == http.MethodConnect:
		p.connect(w, r, pol, rules, proxyAuth, start)
	case r.URL.IsAbs() && r.URL.Scheme == "http" && r.URL.Host != "":
		host, port := r.URL.Hostname(), r.URL.Port()
		if port == "" {
			port = "80"
		}
		d := rules.Request(true, host, r.Method, r.URL.EscapedPath())
		p.forward(w, r, rules, d, "http", host, port, start)
	default:
		u := Use{Orchestrator: rules.Orchestrator, Method: methodLabel(r.Method), Duration: time.Since(start)}
		p.refuse(r.Context(), w, &u, Decision{Kind: errkinds.EgressBadRequest, Rule: "not CONNECT host:port nor an absolute http:// URL"})
	}
}

// connect serves a CONNECT: refused, tunnelled, or intercepted.
func (p *Proxy) connect(w http.ResponseWriter, r *http.Request, pol *Policy, rules *Rules, proxyAuth string, start time.Time) {
	u := Use{Orchestrator: rules.Orchestrator, Method: http.MethodConnect}
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil || host == "" || port == "" {
		p.refuse(r.Context(), w, &u, Decision{Kind: errkinds.EgressBadRequest, Rule: "CONNECT needs host:port"})
		return
	}
	u.Host = normHost(host)
	d := rules.Connect(host, pol.signer != nil)
	u.Action = d.Action
	switch d.Action {
	case Tunnel:
		u.Allowed = true
		p.tunnel(w, r, &u, start)
	case Intercept:
		u.Allowed = true
		p.intercept(w, r, pol.signer, proxyAuth, u.Host, port)
	default:
		u.Allowed = d.Kind != errkinds.EgressHostNotAllowed
		u.Duration = time.Since(start)
		p.refuse(r.Context(), w, &u, d)
	}
}

// tunnel dials the upstream through the guard, answers 200 and relays
// bytes both ways until either side closes.
func (p *Proxy) tunnel(w http.ResponseWriter, r *http.Request, u *Use, start time.Time) {
	ctx, span := p.tracer.Start(r.Context(), "egress tunnel", trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	up, err := p.o.Dial(dctx, "tcp", r.Host)
	cancel()
	if err != nil {
		u.Duration = time.Since(start)
		p.refuse(ctx, w, u, p.dialRefusal(u.Host, err))
		return
	}
	down, buffered, err := hijack(w)
	if err != nil {
		_ = up.Close()
		return
	}
	if !p.track(down) {
		_ = up.Close()
		_ = down.Close()
		return
	}
	defer p.untrack(down)
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		_ = up.Close()
		_ = down.Close()
		return
	}
	u.Status = http.StatusOK
	var upBytes, downBytes atomic.Int64
	done := make(chan struct{})
	go func() {
		n, _ := io.Copy(up, io.MultiReader(buffered, down))
		upBytes.Store(n)
		closeWrite(up)
		close(done)
	}()
	n, _ := io.Copy(down, up)
	downBytes.Store(n)
	closeWrite(down)
	// The upstream is done; a client that never closes its side must not
	// hold the tunnel open for good.
	_ = down.SetReadDeadline(time.Now().Add(tunnelLinger))
	<-done
	_ = up.Close()
	_ = down.Close()
	u.BytesUp, u.BytesDown = upBytes.Load(), downBytes.Load()
	u.Duration = time.Since(start)
	p.observe(ctx, span, u)
}

// closeWrite half-closes c where it can, so the other side sees EOF.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
		return
	}
	_ = c.Close()
}

// intercept answers 200, then terminates the sandbox's TLS with host's
// certificate and serves the requests inside it one by one, each decided
// under the policy in force when it arrives.
func (p *Proxy) intercept(w http.ResponseWriter, r *http.Request, signer *Signer, proxyAuth, host, port string) {
	leaf, err := signer.Leaf(host)
	if err != nil {
		p.log.Error("egress proxy: cannot sign a certificate", "host", host, "error", err.Error())
		u := Use{Host: host, Allowed: true, Method: http.MethodConnect}
		p.refuse(r.Context(), w, &u, Decision{Kind: errkinds.EgressUpstreamFailed, Rule: "the proxy could not make a certificate for " + host})
		return
	}
	down, buffered, err := hijack(w)
	if err != nil {
		return
	}
	if _, err := io.WriteString(down, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		_ = down.Close()
		return
	}
	tconn := tls.Server(&prefixedConn{Conn: down, r: buffered}, &tls.Config{
		Certificates: []tls.Certificate{*leaf},
		// HTTP/1.1 only towards the sandbox: one request at a time per
		// connection, each decided and redacted on its own.
		NextProtos: []string{"http/1.1"},
		MinVersion: tls.VersionTLS12,
	})
	if !p.track(tconn) {
		_ = tconn.Close()
		return
	}
	defer p.untrack(tconn)
	// The server below sets no deadline on the handshake: a client that
	// never sends its hello would hold the connection for good.
	_ = tconn.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := tconn.HandshakeContext(r.Context()); err != nil {
		_ = tconn.Close()
		return
	}
	_ = tconn.SetDeadline(time.Time{})
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rules, err := p.o.Policy().Authenticate(proxyAuth)
		if err != nil {
			u := Use{Host: host, Method: methodLabel(r.Method), Duration: time.Since(start)}
			p.refuse(r.Context(), w, &u, Decision{Kind: errkinds.EgressProxyAuth, Rule: "this sandbox's egress token is no longer admitted"})
			return
		}
		d := rules.Request(false, host, r.Method, r.URL.EscapedPath())
		p.forward(w, r, rules, d, "https", host, port, start)
	})
	ln := newOneConnListener(tconn)
	srv := &http.Server{Handler: inner, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(p.log.Handler(), slog.LevelDebug),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateClosed || s == http.StateHijacked {
				_ = ln.Close()
			}
		}}
	_ = srv.Serve(ln)
}

// hopHeaders are the headers of one connection, never passed on.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func removeHopHeaders(h http.Header) {
	for _, f := range h.Values("Connection") {
		for name := range strings.SplitSeq(f, ",") {
			if name = strings.TrimSpace(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

// forward carries out a request's decision: a refusal, or the request
// sent upward (with the credential when injected) and the answer streamed
// back with every credential of the orchestrator replaced.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, rules *Rules, d Decision, scheme, host, port string, start time.Time) {
	u := Use{Orchestrator: rules.Orchestrator, Host: normHost(host), Allowed: true, Method: methodLabel(r.Method),
		PathPrefix: d.PathPrefix, Action: d.Action}
	if d.Credential != nil {
		u.Credential = d.Credential.Name
	}
	ctx, span := p.tracer.Start(r.Context(), "egress "+d.Action.String(), trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	if d.Action == Refuse {
		u.Allowed = d.Kind != errkinds.EgressHostNotAllowed
		u.Duration = time.Since(start)
		p.refuse(ctx, w, &u, d)
		span.SetStatus(codes.Error, string(d.Kind))
		return
	}
	if r.Header.Get("Upgrade") != "" {
		u.Duration = time.Since(start)
		p.refuse(ctx, w, &u, Decision{Kind: errkinds.EgressBadRequest, Rule: "protocol upgrades are not relayed through an inspected connection"})
		return
	}
	hostport := net.JoinHostPort(host, port)
	out := r.Clone(ctx)
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = scheme, hostport
	// The Host header is the host decided on, whatever the client wrote:
	// a credential for one virtual host must not reach another behind
	// the same address.
	out.Host = host
	if (scheme == "https" && port != "443") || (scheme == "http" && port != "80") {
		out.Host = hostport
	}
	removeHopHeaders(out.Header)
	// Without the client's Accept-Encoding the transport asks for gzip
	// itself and decodes it, so the body can be searched for credentials.
	out.Header.Del("Accept-Encoding")
	if d.Action == Inject {
		out.Header.Del(d.Credential.Header)
		out.Header.Set(d.Credential.Header, d.Credential.value)
	}
	up := &countingReader{r: r.Body}
	if r.Body != nil && r.Body != http.NoBody {
		out.Body = up
	}
	resp, err := p.upstream.RoundTrip(out)
	if err != nil {
		u.Duration, u.BytesUp = time.Since(start), up.n
		p.refuse(ctx, w, &u, p.dialRefusal(u.Host, err))
		span.SetStatus(codes.Error, "upstream")
		return
	}
	defer func() { _ = resp.Body.Close() }()
	if enc := resp.Header.Get("Content-Encoding"); d.Action == Inject && enc != "" && !strings.EqualFold(enc, "identity") {
		u.Duration, u.BytesUp = time.Since(start), up.n
		p.refuse(ctx, w, &u, Decision{Kind: errkinds.EgressUnredactable, Rule: "the upstream answered with Content-Encoding " + sanitize(enc)})
		return
	}
	removeHopHeaders(resp.Header)
	rules.redact.Header(resp.Header)
	if rules.redact != nil {
		// Replacing a value may change the length.
		resp.Header.Del("Content-Length")
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	n, _ := copyFlushing(w, rules.redact.Body(resp.Body))
	u.Status, u.BytesUp, u.BytesDown, u.Duration = resp.StatusCode, up.n, n, time.Since(start)
	p.observe(ctx, span, &u)
}

// copyFlushing copies src to w, flushing after each write so a streamed
// answer (git's progress, server-sent events) is not held back.
func copyFlushing(w http.ResponseWriter, src io.Reader) (int64, error) {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	var total int64
	for {
		n, err := src.Read(buf)
		if n > 0 {
			m, werr := w.Write(buf[:n])
			total += int64(m)
			if werr != nil {
				return total, werr
			}
			_ = rc.Flush()
		}
		if errors.Is(err, io.EOF) {
			return total, nil
		}
		if err != nil {
			return total, err
		}
	}
}

// dialRefusal is the decision for an upstream that could not be reached:
// the guard's refusal, or a failure whose cause goes to the log only.
func (p *Proxy) dialRefusal(host string, err error) Decision {
	if why, ok := tools.RefusedDestination(err); ok {
		return Decision{Action: Refuse, Kind: errkinds.EgressDestinationRefused, Rule: host + " resolves to " + why}
	}
	p.log.Warn("egress proxy: upstream failed", "host", host, "error", err.Error())
	return Decision{Action: Refuse, Kind: errkinds.EgressUpstreamFailed, Rule: "connecting to " + host + " failed (the gateway log has why)"}
}

// refuse answers with d's kind and records the use.
func (p *Proxy) refuse(ctx context.Context, w http.ResponseWriter, u *Use, d Decision) {
	status := http.StatusForbidden
	for _, row := range errkinds.Egress {
		if row.Audit == d.Kind {
			status = row.Status
		}
	}
	u.Action, u.Kind, u.Status = Refuse, d.Kind, status
	if d.Credential != nil {
		u.Credential = d.Credential.Name
		u.PathPrefix = d.PathPrefix
	}
	h := w.Header()
	h.Set(HeaderRefused, string(d.Kind))
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": string(d.Kind), "message": d.Kind.Message(), "rule": d.Rule})
	_, span := p.tracer.Start(ctx, "egress refuse", trace.WithSpanKind(trace.SpanKindClient))
	span.SetStatus(codes.Error, string(d.Kind))
	p.observe(ctx, span, u)
	span.End()
}

// observe puts u on the span and hands it to Options.Observe.
func (p *Proxy) observe(_ context.Context, span trace.Span, u *Use) {
	attrs := []attribute.KeyValue{
		attribute.String("garra.orchestrator", u.Orchestrator),
		attribute.String("garra.egress.action", u.Action.String()),
		attribute.String("http.request.method", u.Method),
		attribute.Int("http.response.status_code", u.Status),
		attribute.Int64("garra.egress.bytes_up", u.BytesUp),
		attribute.Int64("garra.egress.bytes_down", u.BytesDown),
	}
	if u.Allowed {
		attrs = append(attrs, attribute.String("server.address", u.Host))
	}
	if u.Credential != "" {
		attrs = append(attrs, attribute.String("garra.credential", u.Credential))
	}
	if u.PathPrefix != "" {
		attrs = append(attrs, attribute.String("garra.egress.path_prefix", u.PathPrefix))
	}
	if u.Kind != "" {
		attrs = append(attrs, attribute.String("error.type", string(u.Kind)))
	}
	span.SetAttributes(attrs...)
	if p.o.Observe != nil {
		p.o.Observe(*u)
	}
}

// methodLabel is an HTTP method as recorded: a known one, or OTHER (the
// method is caller-chosen text).
func methodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodConnect, http.MethodOptions, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// hostOnly is the host a request names, for a refusal's record.
func hostOnly(r *http.Request) string {
	h := r.Host
	if r.URL != nil && r.URL.Host != "" {
		h = r.URL.Host
	}
	if host, _, err := net.SplitHostPort(h); err == nil {
		h = host
	}
	return normHost(h)
}

// sanitize keeps a header value short and printable for a rule.
func sanitize(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < ' ' || r > '~' {
			return '?'
		}
		return r
	}, s)
	if len(s) > 40 {
		s = s[:40]
	}
	return s
}

// countingReader counts what is read through it.
type countingReader struct {
	r io.ReadCloser
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }

// hijack takes the connection of a CONNECT over, with what the server
// had already read past the request (a client may send its TLS hello
// without waiting for the 200).
func hijack(w http.ResponseWriter) (net.Conn, io.Reader, error) {
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, nil, err
	}
	var buffered io.Reader = strings.NewReader("")
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Peek(n)
		buffered = strings.NewReader(string(b))
	}
	_ = c.SetDeadline(time.Time{})
	return c, buffered, nil
}

// prefixedConn reads r first, then the connection.
type prefixedConn struct {
	net.Conn
	r    io.Reader
	done bool
}

func (c *prefixedConn) Read(b []byte) (int, error) {
	if !c.done {
		n, err := c.r.Read(b)
		if n > 0 {
			return n, nil
		}
		if err != nil {
			c.done = true
		}
	}
	return c.Conn.Read(b)
}

// oneConnListener hands out one connection, then waits until closed.
type oneConnListener struct {
	conn   net.Conn
	once   sync.Once
	closed chan struct{}
	close  sync.Once
}

func newOneConnListener(c net.Conn) *oneConnListener {
	return &oneConnListener{conn: c, closed: make(chan struct{})}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	var c net.Conn
	l.once.Do(func() { c = l.conn })
	if c != nil {
		return c, nil
	}
	<-l.closed
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.close.Do(func() { close(l.closed) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return l.conn.LocalAddr() }
