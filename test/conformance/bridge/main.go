// Command bridge lets the MCP conformance suite, which only speaks the
// Streamable HTTP transport, test an MCP server that runs over stdio.
//
// Stdio mode (the default) serves Streamable HTTP on --listen and, for every
// new session (an initialize POST without Mcp-Session-Id), starts a fresh
// child process from the command after "--". JSON-RPC messages are forwarded
// byte for byte in both directions: the bridge never answers an MCP request
// itself, so initialize, logging/setLevel, tools/list and the rest are
// answered by the child. Only the transport is the bridge's: sessions,
// SSE framing, the Host/Origin check and the MCP-Protocol-Version check.
// Requests of the stateless revision (2026-07-28: no initialize, no session,
// the version in every request's _meta) share one child instead; see
// stateless.go for the little that the bridge changes on their way.
//
// Proxy mode (--upstream URL) is a plain reverse proxy that adds the --header
// values to every request, for servers that already speak HTTP but need e.g.
// a bearer token that the suite's CLI cannot send.
//
// Usage:
//
//	bridge [--listen 127.0.0.1:0] [--path /mcp] [--addr-file F] [--print-addr] -- CMD ARGS...
//	bridge [--listen 127.0.0.1:0] [--addr-file F] [--print-addr] --upstream URL [--header 'K: V']...
package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"
)

const (
	sessionHeader  = "Mcp-Session-Id"
	versionHeader  = "Mcp-Protocol-Version"
	maxBody        = 4 << 20 // bytes accepted in one POST
	maxBacklog     = 1000    // messages kept for a standalone stream not yet opened
	maxChildLine   = 64 << 20
	childGraceTime = 2 * time.Second
)

// knownVersions are the protocol versions whose MCP-Protocol-Version header
// the bridge lets through; an older unknown one gets 400, as the spec
// requires. An unknown version from statelessVersion on reaches the child,
// which names the versions it supports in its -32022 error.
var knownVersions = map[string]bool{
	"2024-11-05":     true,
	"2025-03-26":     true,
	"2025-06-18":     true,
	"2025-11-25":     true,
	statelessVersion: true,
}

type headerList []string

func (h *headerList) String() string     { return strings.Join(*h, ", ") }
func (h *headerList) Set(v string) error { *h = append(*h, v); return nil }

func main() {
	log.SetFlags(log.Ltime | log.Lmicroseconds)
	log.SetPrefix("bridge: ")

	listen := flag.String("listen", "127.0.0.1:0", "address to serve HTTP on")
	path := flag.String("path", "/mcp", "endpoint path (stdio mode)")
	addrFile := flag.String("addr-file", "", "write the endpoint URL to this file once listening")
	printAddr := flag.Bool("print-addr", false, "print the endpoint URL on stdout once listening")
	upstream := flag.String("upstream", "", "proxy mode: forward every request to this URL")
	var headers headerList
	flag.Var(&headers, "header", "proxy mode: `'Name: value'` added to every forwarded request (repeatable)")
	verbose := flag.Bool("v", false, "log every forwarded message")
	flag.Usage = func() {
		_, _ = fmt.Fprintf(flag.CommandLine.Output(), "usage:\n  %[1]s [flags] -- COMMAND [ARGS...]\n  %[1]s [flags] --upstream URL [--header 'K: V']...\n\nflags:\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()

	var handler http.Handler
	var endpoint string // path part of the printed URL
	switch {
	case *upstream != "" && flag.NArg() > 0:
		log.Fatal("give either --upstream or a command after --, not both")
	case *upstream != "":
		u, err := url.Parse(*upstream)
		if err != nil || u.Scheme == "" || u.Host == "" {
			log.Fatalf("bad --upstream %q", *upstream)
		}
		hs, err := parseHeaders(headers)
		if err != nil {
			log.Fatal(err)
		}
		handler = newProxy(u, hs)
		endpoint = u.EscapedPath()
		if u.RawQuery != "" {
			endpoint += "?" + u.RawQuery
		}
	case flag.NArg() > 0:
		if len(headers) > 0 {
			log.Fatal("--header only applies to --upstream mode")
		}
		if !strings.HasPrefix(*path, "/") {
			log.Fatalf("--path must start with /")
		}
		b := &bridge{command: flag.Args(), sessions: map[string]*session{}, verbose: *verbose}
		defer b.closeAll()
		mux := http.NewServeMux()
		mux.Handle(*path, b)
		handler = mux
		endpoint = *path
	default:
		flag.Usage()
		os.Exit(2)
	}

	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	full := "http://" + ln.Addr().String() + endpoint
	if *addrFile != "" {
		// Write to a temporary name and rename, so a reader polling for the
		// file never sees it half-written.
		tmp := *addrFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(full+"\n"), 0o600); err != nil {
			log.Fatal(err)
		}
		if err := os.Rename(tmp, *addrFile); err != nil {
			log.Fatal(err)
		}
	}
	if *printAddr {
		fmt.Println(full)
	}

	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-errc:
		log.Print(err)
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx) // open SSE streams don't end by themselves; Close follows
	_ = srv.Close()
}

func parseHeaders(list []string) (http.Header, error) {
	h := http.Header{}
	for _, kv := range list {
		k, v, ok := strings.Cut(kv, ":")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("bad --header %q: want 'Name: value'", kv)
		}
		h.Add(k, strings.TrimSpace(v))
	}
	return h, nil
}

// newProxy forwards every request to upstream with extra headers set. The
// Host header is passed through unless it names the proxy itself, so that a
// spoofed Host (as in the DNS-rebinding scenario) still reaches upstream.
func newProxy(upstream *url.URL, extra http.Header) http.Handler {
	rp := &httputil.ReverseProxy{
		FlushInterval: -1, // stream SSE events as they come
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme = upstream.Scheme
			r.Out.URL.Host = upstream.Host
			r.Out.Host = upstream.Host
			if local, ok := r.In.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
				if !sameHostPort(r.In.Host, local.String()) {
					r.Out.Host = r.In.Host
				}
				// An Origin naming the proxy is same-origin to the suite;
				// keep it same-origin to the upstream too.
				if o, err := url.Parse(r.In.Header.Get("Origin")); err == nil && o.Host != "" && sameHostPort(o.Host, local.String()) {
					r.Out.Header.Set("Origin", upstream.Scheme+"://"+upstream.Host)
				}
			}
			for k, vs := range extra {
				r.Out.Header[k] = vs
			}
		},
		ErrorLog: log.Default(),
	}
	return rp
}

// sameHostPort reports whether a Host header value addresses listenAddr,
// treating localhost and any loopback IP as the same host.
func sameHostPort(host, listenAddr string) bool {
	hh, hp, err1 := net.SplitHostPort(host)
	lh, lp, err2 := net.SplitHostPort(listenAddr)
	if err1 != nil || err2 != nil || hp != lp {
		return false
	}
	return hh == lh || (isLoopbackHost(hh) && isLoopbackHost(lh))
}

// ---------------------------------------------------------------------------
// Stdio mode.

type bridge struct {
	command []string
	verbose bool

	mu        sync.Mutex
	sessions  map[string]*session // addressable sessions, by id
	stateless *session            // the child that serves sessionless requests
	started   []*session          // every session ever started, for closeAll
	closed    bool
}

func (b *bridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !hostAllowed(r) {
		http.Error(w, "Forbidden: Host or Origin is not localhost", http.StatusForbidden)
		return
	}
	if v := r.Header.Get(versionHeader); v != "" && !knownVersions[v] && v < statelessVersion {
		http.Error(w, "Bad Request: unsupported "+versionHeader, http.StatusBadRequest)
		return
	}
	switch r.Method {
	case http.MethodPost:
		b.servePOST(w, r)
	case http.MethodGet:
		b.serveGET(w, r)
	case http.MethodDelete:
		b.serveDELETE(w, r)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
	}
}

// hostAllowed implements DNS-rebinding protection for a loopback listener:
// the Host header, and the Origin header if any, must name a loopback host.
func hostAllowed(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || !isLoopbackHost(hostOnly(local.String())) {
		return true
	}
	if !isLoopbackHost(hostOnly(r.Host)) {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !isLoopbackHost(u.Hostname()) {
			return false
		}
	}
	return true
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

func (b *bridge) lookup(w http.ResponseWriter, r *http.Request) *session {
	id := r.Header.Get(sessionHeader)
	if id == "" {
		http.Error(w, "Bad Request: missing "+sessionHeader, http.StatusBadRequest)
		return nil
	}
	b.mu.Lock()
	s := b.sessions[id]
	b.mu.Unlock()
	if s == nil {
		http.Error(w, "Not Found: unknown session", http.StatusNotFound)
		return nil
	}
	return s
}

func (b *bridge) servePOST(w http.ResponseWriter, r *http.Request) {
	if mt := strings.TrimSpace(strings.Split(r.Header.Get("Content-Type"), ";")[0]); !strings.EqualFold(mt, "application/json") {
		http.Error(w, "Unsupported Media Type: Content-Type must be application/json", http.StatusUnsupportedMediaType)
		return
	}
	if !accepts(r, "application/json") || !accepts(r, "text/event-stream") {
		http.Error(w, "Not Acceptable: Accept must list application/json and text/event-stream", http.StatusNotAcceptable)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		http.Error(w, "Bad Request: "+err.Error(), http.StatusBadRequest)
		return
	}
	msgs, err := splitMessages(body)
	if err != nil {
		writeJSONRPCError(w, http.StatusBadRequest, -32700, "Parse error: "+err.Error())
		return
	}

	var s *session
	if r.Header.Get(sessionHeader) == "" {
		if isStateless(r, msgs) {
			b.serveStateless(w, r, msgs, bytes.HasPrefix(bytes.TrimSpace(body), []byte("[")))
			return
		}
		if !hasMethod(msgs, "initialize") {
			http.Error(w, "Bad Request: missing "+sessionHeader+" (only initialize may start a session)", http.StatusBadRequest)
			return
		}
		s, err = b.newSession(true)
		if err != nil {
			log.Printf("starting child: %v", err)
			writeJSONRPCError(w, http.StatusInternalServerError, -32603, "bridge could not start the server process: "+err.Error())
			return
		}
	} else if s = b.lookup(w, r); s == nil {
		return
	}

	// Requests among msgs get a response stream; notifications and responses
	// (e.g. the client's answer to a sampling request) are only forwarded.
	var ids []string
	var progress []string
	for _, m := range msgs {
		if m.isRequest() {
			ids = append(ids, string(m.ID))
			if m.Params.Meta.ProgressToken != nil {
				progress = append(progress, string(m.Params.Meta.ProgressToken))
			}
		}
	}
	if len(ids) == 0 {
		for _, m := range msgs {
			if err := s.send(m.raw); err != nil {
				http.Error(w, "server process is gone", http.StatusNotFound)
				return
			}
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}

	st := s.openStream(ids, progress)
	defer s.closeStream(st)
	for _, m := range msgs {
		if err := s.send(m.raw); err != nil {
			break // the stream ends when the session does
		}
	}
	w.Header().Set(sessionHeader, s.id)
	st.serve(r.Context(), w, s.done)
}

func (b *bridge) serveGET(w http.ResponseWriter, r *http.Request) {
	if !accepts(r, "text/event-stream") {
		http.Error(w, "Not Acceptable: GET needs Accept: text/event-stream", http.StatusNotAcceptable)
		return
	}
	s := b.lookup(w, r)
	if s == nil {
		return
	}
	st, ok := s.openStandalone()
	if !ok {
		http.Error(w, "Conflict: a standalone SSE stream is already open for this session", http.StatusConflict)
		return
	}
	defer s.closeStandalone(st)
	st.serve(r.Context(), w, s.done)
}

func (b *bridge) serveDELETE(w http.ResponseWriter, r *http.Request) {
	s := b.lookup(w, r)
	if s == nil {
		return
	}
	b.drop(s)
	s.terminate()
	w.WriteHeader(http.StatusNoContent)
}

// newSession starts a child. An addressable session is found by its
// Mcp-Session-Id; the stateless one is not.
func (b *bridge) newSession(addressable bool) (*session, error) {
	var raw [16]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	s := &session{
		id:       hex.EncodeToString(raw[:]),
		verbose:  b.verbose,
		done:     make(chan struct{}),
		pending:  map[string]*stream{},
		progress: map[string]*stream{},
	}
	cmd := exec.Command(b.command[0], b.command[1:]...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = childProcAttr()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// A pipe of our own rather than StdoutPipe: cmd.Wait must not close the
	// read end while the router still drains what the child wrote.
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout = stdoutW
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		_ = stdout.Close()
		_ = stdoutW.Close()
		return nil, errors.New("bridge is shutting down")
	}
	err = cmd.Start()
	_ = stdoutW.Close() // the child has its copy
	if err != nil {
		_ = stdout.Close()
		return nil, err
	}
	s.cmd, s.stdin = cmd, stdin
	s.exited = make(chan struct{})
	log.Printf("session %s: started %q (pid %d)", s.id[:8], b.command, cmd.Process.Pid)
	go func() {
		s.readChild(stdout)
		_ = stdout.Close()
		b.drop(s)
		s.terminate() // the child may still run with its stdout closed
	}()
	go func() {
		err := cmd.Wait()
		log.Printf("session %s: child exited: %v", s.id[:8], exitStatus(err))
		close(s.exited)
	}()
	if addressable {
		b.sessions[s.id] = s
	}
	b.started = append(b.started, s)
	return s, nil
}

func exitStatus(err error) string {
	if err == nil {
		return "status 0"
	}
	return err.Error()
}

func (b *bridge) drop(s *session) {
	b.mu.Lock()
	delete(b.sessions, s.id)
	b.mu.Unlock()
}

func (b *bridge) closeAll() {
	b.mu.Lock()
	b.closed = true
	all := b.started
	b.sessions = map[string]*session{}
	b.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Add(1)
		go func() { defer wg.Done(); s.terminate() }()
	}
	wg.Wait()
}

// session is one MCP session: one child process.
type session struct {
	id      string
	verbose bool
	cmd     *exec.Cmd
	exited  chan struct{}

	writeMu sync.Mutex
	stdin   io.WriteCloser

	done     chan struct{} // closed when the child's stdout ends
	doneOnce sync.Once
	termOnce sync.Once

	mu         sync.Mutex
	streams    []*stream          // open POST streams, oldest first
	pending    map[string]*stream // request id -> stream awaiting its response
	progress   map[string]*stream // progress token -> stream of that request
	standalone *stream            // the GET stream, if open
	backlog    [][]byte           // for the standalone stream, until it opens
	lastID     uint64             // the stateless session's last request id
}

// send writes one message to the child, newline-delimited as stdio requires.
func (s *session) send(raw []byte) error {
	select {
	case <-s.done:
		return errors.New("session closed")
	default:
	}
	if s.verbose {
		log.Printf("session %s: -> %s", s.id[:8], raw)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	buf := make([]byte, 0, len(raw)+1)
	buf = append(buf, raw...)
	buf = append(buf, '\n')
	_, err := s.stdin.Write(buf)
	return err
}

// readChild routes every line the child prints to the right HTTP stream.
func (s *session) readChild(stdout io.Reader) {
	defer s.doneOnce.Do(func() { close(s.done) })
	rd := bufio.NewReaderSize(stdout, 64<<10)
	for {
		line, err := readLine(rd)
		if len(bytes.TrimSpace(line)) > 0 {
			s.route(bytes.TrimSpace(line))
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				log.Printf("session %s: reading child stdout: %v", s.id[:8], err)
			}
			return
		}
	}
}

func readLine(rd *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := rd.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxChildLine {
			return nil, fmt.Errorf("line longer than %d bytes", maxChildLine)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}

func (s *session) route(raw []byte) {
	var m message
	if err := json.Unmarshal(raw, &m); err != nil || m.JSONRPC != "2.0" {
		log.Printf("session %s: child printed a non-JSON-RPC line on stdout (dropped): %.200s", s.id[:8], raw)
		return
	}
	if s.verbose {
		log.Printf("session %s: <- %s", s.id[:8], raw)
	}
	msg := append([]byte(nil), raw...)

	s.mu.Lock()
	defer s.mu.Unlock()
	var target *stream
	switch {
	case m.isResponse():
		// A response goes to the stream of its request, and nowhere else.
		target = s.pending[string(m.ID)]
		delete(s.pending, string(m.ID))
		if target == nil {
			log.Printf("session %s: response to %s has no open stream (dropped)", s.id[:8], m.ID)
			return
		}
		if target.callerID != nil {
			msg = target.restoreID(msg)
		}
		target.push(msg, true)
		return
	case m.Method == "notifications/progress" && m.Params.ProgressToken != nil:
		target = s.progress[string(m.Params.ProgressToken)]
	case m.Params.Meta.SubscriptionID != nil:
		// A subscriptions/listen stream's notification names its request.
		target = s.pending[string(m.Params.Meta.SubscriptionID)]
		if target != nil && target.callerID != nil {
			msg = target.restoreSubscriptionID(msg)
		}
	}
	// Over stdio nothing ties a notification or server request to the client
	// request it belongs to. Progress carries its token; anything else goes
	// to the newest request still open, as a server would usually send it in
	// the handler of that request. With no request open it goes to the
	// standalone stream.
	if target == nil {
		for i := len(s.streams) - 1; i >= 0; i-- {
			if s.streams[i].remaining > 0 {
				target = s.streams[i]
				break
			}
		}
	}
	if target == nil {
		target = s.standalone
	}
	if target == nil {
		if len(s.backlog) >= maxBacklog {
			s.backlog = s.backlog[1:]
		}
		s.backlog = append(s.backlog, msg)
		return
	}
	target.push(msg, false)
}

func (s *session) openStream(ids, progress []string) *stream {
	st := newStream()
	st.remaining = len(ids)
	st.progress = progress
	st.ids = ids
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		s.pending[id] = st
	}
	for _, p := range progress {
		s.progress[p] = st
	}
	s.streams = append(s.streams, st)
	return st
}

func (s *session) closeStream(st *stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range st.ids {
		if s.pending[id] == st {
			delete(s.pending, id)
		}
	}
	for _, p := range st.progress {
		if s.progress[p] == st {
			delete(s.progress, p)
		}
	}
	for i, x := range s.streams {
		if x == st {
			s.streams = append(s.streams[:i], s.streams[i+1:]...)
			break
		}
	}
	st.remaining = 0
}

func (s *session) openStandalone() (*stream, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.standalone != nil {
		return nil, false
	}
	st := newStream()
	st.remaining = -1 // never completes by itself
	st.queue = append(st.queue, s.backlog...)
	s.backlog = nil
	st.signal()
	s.standalone = st
	return st, true
}

func (s *session) closeStandalone(st *stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.standalone == st {
		s.standalone = nil
	}
}

// terminate ends the child as the stdio transport spec describes: close its
// stdin, then SIGTERM, then SIGKILL, each after a grace period.
func (s *session) terminate() {
	s.termOnce.Do(func() {
		s.writeMu.Lock()
		_ = s.stdin.Close()
		s.writeMu.Unlock()
		select {
		case <-s.exited:
		case <-time.After(childGraceTime):
			killGroup(s.cmd.Process, syscall.SIGTERM)
			select {
			case <-s.exited:
			case <-time.After(childGraceTime):
				killGroup(s.cmd.Process, syscall.SIGKILL)
				select {
				case <-s.exited:
				case <-time.After(childGraceTime):
					log.Printf("session %s: child pid %d survived SIGKILL", s.id[:8], s.cmd.Process.Pid)
				}
			}
		}
		// The child may have left processes of its own in its group.
		killGroup(s.cmd.Process, syscall.SIGKILL)
		s.doneOnce.Do(func() { close(s.done) })
	})
}

// stream is one SSE response: a POST's, or the standalone GET's.
type stream struct {
	remaining int      // responses still owed; guarded by session.mu
	ids       []string // request ids it carries
	progress  []string // progress tokens of those requests

	// Stateless requests only: the id the caller gave its request, which
	// the child saw as ids[0].
	callerID json.RawMessage

	mu     sync.Mutex
	queue  [][]byte
	final  bool // the last owed response is in queue
	wakeup chan struct{}
}

func newStream() *stream { return &stream{wakeup: make(chan struct{}, 1)} }

// push queues a message; called with session.mu held.
func (st *stream) push(msg []byte, isResponse bool) {
	if isResponse && st.remaining > 0 {
		st.remaining--
	}
	st.mu.Lock()
	st.queue = append(st.queue, msg)
	if isResponse && st.remaining == 0 {
		st.final = true
	}
	st.mu.Unlock()
	st.signal()
}

// queued is how many messages wait to be written.
func (st *stream) queued() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.queue)
}

func (st *stream) signal() {
	select {
	case st.wakeup <- struct{}{}:
	default:
	}
}

// serve writes queued messages as SSE events until every owed response has
// been written, the client goes away, or the session ends.
func (st *stream) serve(ctx context.Context, w http.ResponseWriter, sessionDone <-chan struct{}) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache, no-transform")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	for {
		st.mu.Lock()
		batch := st.queue
		st.queue = nil
		final := st.final
		st.mu.Unlock()
		for _, m := range batch {
			if _, err := fmt.Fprintf(w, "event: message\ndata: %s\n\n", m); err != nil {
				return
			}
		}
		if len(batch) > 0 {
			if err := rc.Flush(); err != nil {
				return
			}
		}
		if final {
			return
		}
		select {
		case <-st.wakeup:
		case <-ctx.Done():
			return
		case <-sessionDone:
			// Deliver what the child printed before it went away.
			if st.queued() == 0 {
				return
			}
		}
	}
}

// ---------------------------------------------------------------------------
// JSON-RPC peeking. Messages are forwarded as received; these types only
// read what routing needs.

type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
	Params  struct {
		ProgressToken json.RawMessage `json:"progressToken"`
		Meta          struct {
			ProgressToken   json.RawMessage `json:"progressToken"`
			ProtocolVersion json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
			SubscriptionID  json.RawMessage `json:"io.modelcontextprotocol/subscriptionId"`
		} `json:"_meta"`
	} `json:"params"`

	raw []byte
}

func (m *message) isRequest() bool  { return m.Method != "" && len(m.ID) > 0 && string(m.ID) != "null" }
func (m *message) isResponse() bool { return m.Method == "" && len(m.ID) > 0 }

// splitMessages parses a POST body: one JSON-RPC message or a batch.
func splitMessages(body []byte) ([]*message, error) {
	body = bytes.TrimSpace(body)
	var raws []json.RawMessage
	if len(body) > 0 && body[0] == '[' {
		if err := json.Unmarshal(body, &raws); err != nil {
			return nil, err
		}
		if len(raws) == 0 {
			return nil, errors.New("empty batch")
		}
	} else {
		raws = []json.RawMessage{body}
	}
	out := make([]*message, 0, len(raws))
	for _, r := range raws {
		m := &message{}
		if err := json.Unmarshal(r, m); err != nil {
			return nil, err
		}
		if m.JSONRPC != "2.0" {
			return nil, errors.New(`"jsonrpc" must be "2.0"`)
		}
		// Compact keeps the newline-delimited framing of stdio intact.
		var buf bytes.Buffer
		if err := json.Compact(&buf, r); err != nil {
			return nil, err
		}
		m.raw = buf.Bytes()
		out = append(out, m)
	}
	return out, nil
}

func hasMethod(msgs []*message, method string) bool {
	for _, m := range msgs {
		if m.Method == method {
			return true
		}
	}
	return false
}

func accepts(r *http.Request, mediaType string) bool {
	major, _, _ := strings.Cut(mediaType, "/")
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt := strings.ToLower(strings.TrimSpace(strings.Split(part, ";")[0]))
			if mt == mediaType || mt == "*/*" || mt == major+"/*" {
				return true
			}
		}
	}
	return false
}

func writeJSONRPCError(w http.ResponseWriter, status, code int, msg string) {
	writeJSONRPCErrorFor(w, nil, status, code, msg)
}

// writeJSONRPCErrorFor answers the request with this id (nil: id null).
func writeJSONRPCErrorFor(w http.ResponseWriter, id json.RawMessage, status, code int, msg string) {
	var rid any
	if id != nil {
		rid = id
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": "2.0",
		"id":      rid,
		"error":   map[string]any{"code": code, "message": msg},
	})
}
