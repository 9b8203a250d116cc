// Package sandbox is the per-orchestrator tool runtime behind
// `garra sandbox`: an MCP server over Streamable HTTP whose tools are the
// agent's hands (bash, file_read, file_write, git_diff, web_fetch) working
// on one workspace directory.
//
// It runs in the orchestrator's own pod. The pod is the security boundary:
// it holds no LLM provider key, sees only its own workspace volume, and the
// gateway (which runs the agent loop) reaches it over the cluster network
// with a bearer token. web_search is not offered: the Brave key stays in the
// gateway.
//
// # Wire
//
//   - POST /mcp: MCP Streamable HTTP, stateless, JSON responses (go-sdk
//     StreamableHTTPHandler with Stateless and JSONResponse). Every request
//     to /mcp, whatever the method, needs "Authorization: Bearer TOKEN";
//     without it or with a wrong token the answer is 401 before the MCP
//     layer sees the request. The token is compared in constant time (both
//     sides are hashed to a fixed length first, so the comparison leaks
//     neither content nor length).
//   - GET /healthz: 200 while the process serves HTTP. No auth.
//   - GET /readyz: 200 while the workspace is still the directory the
//     server started on (present, a directory, not a symlink, same inode);
//     503 otherwise. No auth.
//
// # Tools
//
// Each MCP tool is one tools.Local tool with the same name, description and
// input schema, sent out byte for byte (tools are registered with the
// low-level Server.AddTool, so the SDK neither re-validates arguments nor
// rewrites the schema; tools.Local validates strictly itself). A call
// returns one TextContent with the tool's output and IsError from its
// Result. bash runs on the pod (tools.HostRunner with the workspace as its
// directory); the shell gate (internal/shellgate) still applies inside the
// tool. file_read and file_write are confined to the workspace by a jail.
// web_fetch may reach any address: unlike in the gateway, no egress guard
// applies, because the pod's NetworkPolicy is the boundary and bash, in
// the same pod, reaches whatever web_fetch could.
//
// # Host header check
//
// The go-sdk handler refuses (403) a request whose connection arrived on a
// loopback address with a Host header that is not loopback (DNS-rebinding
// protection). In the cluster the gateway connects to the pod IP through
// the Service name, so the local address is not loopback and the check does
// not apply; through `kubectl port-forward` or a local run the client uses
// localhost/127.0.0.1 and passes it. It is left enabled on purpose: the
// bearer token, not the Host header, is what admits a caller.
//
// # Cancellation
//
// A call ends when its HTTP request does (the gateway's deadline, a
// dropped connection), whatever protocol version the client negotiated;
// bash's process group is killed with it. The go-sdk does this itself
// only for protocol 2026-07-28 (PropagateRequestCancellation); for older
// versions a small middleware hands the request's context to the tool
// handler. On shutdown (Run/Serve) in-flight calls get a grace period.
//
// # Process boundary
//
// bash runs as the server's own uid, so the server protects itself by
// construction (procguard, set up by cmd/garra before anything else):
//
//   - The server is non-dumpable: bash cannot read its environment (where
//     the token is, when it comes from GARRA_SANDBOX_TOKEN), open its
//     descriptors or memory, or ptrace it. A token file would not be
//     safer here: any file the server can read, bash, running as the same
//     uid, can read too; an environment variable of a non-dumpable process
//     it cannot.
//   - Where the kernel offers Landlock, each bash command runs in a domain
//     of its own (sandboxConfinement): it cannot read the token file, nor
//     write outside the workspace, the home and its private TMPDIR, nor
//     signal the server.
//   - Each bash command runs under its own supervisor (tools.HostRunner):
//     nothing it starts survives the call, even after setsid or a
//     backgrounded job; the server is the pod's first process and a
//     subreaper, and kills the orphans of a supervisor the command killed.
//   - The pod bounds the number of processes (the kubelet's pod pids limit,
//     and the container's memory limit), not RLIMIT_NPROC: that limit
//     counts the uid's tasks in every pod of the node that shares the host's
//     user namespace, which this pod cannot see, so a per-call limit
//     computed here could leave bash no process at all on a busy node.
//
// The workspace's .git stays writable to bash: a read-only bind needs
// privileges the restricted pod does not have, and it is not needed. A
// hook, fsmonitor, alias or filter planted there only ever runs in this same
// pod, on this same volume, with the same rights the command that planted
// it already had: no host ever runs git on the workspace volume, and the
// sandbox's own git_diff disables hooks, fsmonitor, external diff, textconv
// and filter drivers (tools.gitHardening).
//
// # Logs
//
// One line per tool call: tool, outcome (ok, tool_error, error),
// duration_ms. Arguments and outputs are never logged. The go-sdk's own
// logging is limited to warnings and errors.
package sandbox

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/filewatch"
	"github.com/garraia/garra/internal/hands"
	"github.com/garraia/garra/internal/jail"
	"github.com/garraia/garra/internal/mcpcancel"
	"github.com/garraia/garra/internal/mcptrace"
	"github.com/garraia/garra/internal/toolchain"
	"github.com/garraia/garra/internal/tools"
	"github.com/garraia/garra/internal/unbuffered"
)

// TokenEnv is the environment variable the sandbox reads its bearer token
// from (the operator fills it from the orchestrator's Secret).
const TokenEnv = "GARRA_SANDBOX_TOKEN"

// TokenFileEnv names a file holding the token instead (`garra sandbox
// --token-file`), for deployments that mount it; set one or the other.
const TokenFileEnv = "GARRA_SANDBOX_TOKEN_FILE"

// MinTokenLen is the shortest token the server accepts. The operator
// generates 32 random bytes (43 base64url characters); anything shorter
// than this is a misconfiguration, not a secret.
const MinTokenLen = 16

// DefaultShutdownTimeout is how long Run lets in-flight calls finish after
// its context ends before it closes their connections (which cancels them
// and kills their bash process groups). It stays under Kubernetes' default
// 30 s termination grace period.
const DefaultShutdownTimeout = 25 * time.Second

// cutGrace is how long the calls cut at the shutdown deadline get to
// answer with their error before their connections are closed.
const cutGrace = 3 * time.Second

// maxRequestBodyBytes caps one POST /mcp body: file_write accepts 8 MiB of
// content, which JSON escaping can inflate; the go-sdk default (4 MiB)
// would refuse legitimate writes.
const maxRequestBodyBytes = 25 << 20

// ServerName is the MCP implementation name the sandbox reports.
const ServerName = "garra-sandbox"

// Errors New returns (wrapped with detail), for callers that branch.
var (
	// ErrNoToken: the token is empty.
	ErrNoToken = errors.New(TokenEnv + " is not set (nor " + TokenFileEnv + "): the sandbox refuses to start without a bearer token")
	// ErrWeakToken: the token is too short or contains whitespace or
	// control characters (it could not be sent as a bearer token anyway).
	ErrWeakToken = fmt.Errorf("%s must be at least %d characters with no whitespace or control characters", TokenEnv, MinTokenLen)
	// ErrWorkspace: the workspace is missing, not a directory, or a symlink.
	ErrWorkspace = errors.New("unusable workspace")
)

// Options configures a Server.
type Options struct {
	// Workspace is the directory the tools work on: it must exist, be a
	// directory and not be a symlink itself (its parents may be).
	Workspace string
	// Token is the bearer token every /mcp request must carry; it or
	// TokenFile is required.
	Token string
	// TokenFile holds the accepted tokens instead, one per line, each
	// valid (the overlap of a rotation). Serve re-reads it when it
	// changes (a Secret volume's update), so a rotation needs no restart.
	TokenFile string
	// Logger receives startup, shutdown and per-call lines; nil discards.
	// Pass one that redacts (cmd/garra does).
	Logger *slog.Logger
	// Version is reported in the MCP implementation info ("dev" if empty).
	Version string
	// HTTPClient is web_fetch's client; nil uses the tools default.
	HTTPClient *http.Client
	// MaxOutputBytes caps each tool result (tools.DefaultMaxOutputBytes
	// when not positive).
	MaxOutputBytes int
	// ShutdownTimeout overrides DefaultShutdownTimeout for Run.
	ShutdownTimeout time.Duration
	// RequiredTools are the programs the orchestrator's spec says the
	// image must have; garra://sandbox/toolchain lists the missing ones.
	// Each must pass toolchain.CheckRequired.
	RequiredTools []string
	// ToolchainPATH is the PATH searched for the toolchain ("" = $PATH,
	// which is bash's too).
	ToolchainPATH string
	// ToolchainTTL is how long a discovery is served before the next read
	// runs it again (DefaultToolchainTTL when not positive).
	ToolchainTTL time.Duration
	// TracerProvider makes each MCP request a SERVER span, a child of
	// the gateway's span when its traceparent header came along; nil =
	// untraced.
	TracerProvider trace.TracerProvider
	// EgressProxy is the gateway's egress proxy (GARRA_EGRESS_PROXY,
	// http://HOST:PORT) and EgressCAFile the PEM of its CA
	// (GARRA_EGRESS_CA_FILE): with them, every bash call's environment
	// sends HTTP(S) through the proxy with this sandbox's egress token
	// and trusts the CA beside the image's own roots, and web_fetch goes
	// the same way. "" = neither.
	EgressProxy  string
	EgressCAFile string
}

// DefaultToolchainTTL is how long one toolchain discovery is served: the
// image's programs change only when bash installs one under HOME or the
// workspace, and a discovery runs a process per program found.
const DefaultToolchainTTL = time.Minute

// Server is the sandbox: build it with New, serve Handler (or call Run),
// and Close it when done.
type Server struct {
	workspace string                              // absolute, symlinks resolved
	wsInfo    os.FileInfo                         // the directory as it was at New, for readyz
	tokens    atomic.Pointer[[][sha256.Size]byte] // digests of the accepted tokens
	tokenFile string
	log       *slog.Logger
	jail      *jail.Jail
	local     *tools.Local
	// confinement names bash's kernel confinement, for the start line.
	confinement string
	mcp         *mcp.Server
	handler     http.Handler
	shutdown    time.Duration
	// stopCalls cancels every call still running at the shutdown
	// deadline, which kills its bash process group.
	stopCtx   context.Context
	stopCalls context.CancelFunc

	// requests ties each call to its HTTP request, so a client that
	// disconnects stops its bash command instead of leaving it to run
	// until its own timeout (up to 10 minutes).
	requests *mcpcancel.Requests

	toolchain *toolchainCache
	// egress is bash's way out through the gateway; nil without it.
	egress *egress
}

// callIDHeader carries, from our middleware to the tool handler, the id
// of the HTTP request a call arrived on. Any value a client sends is
// overwritten.
const callIDHeader = "Garra-Sandbox-Request-Id"

// New checks the options, opens the workspace and builds the MCP server.
// It fails without a token and with a workspace that does not exist, is
// not a directory or is a symlink.
func New(o Options) (*Server, error) {
	var sums [][sha256.Size]byte
	first := o.Token
	switch {
	case o.TokenFile != "" && o.Token != "":
		return nil, errors.New("a token and a token file are both set: set only one")
	case o.TokenFile != "":
		var err error
		if sums, first, err = readTokenFile(o.TokenFile); err != nil {
			return nil, err
		}
	default:
		if err := checkToken(o.Token); err != nil {
			return nil, err
		}
		sums = [][sha256.Size]byte{sha256.Sum256([]byte(o.Token))}
	}
	var eg *egress
	if o.EgressProxy != "" || o.EgressCAFile != "" {
		var err error
		if eg, err = newEgress(o.EgressProxy, o.EgressCAFile, systemBundles); err != nil {
			return nil, err
		}
		// The first token is the newest of a rotation, as the gateway's
		// copy has it; the gateway admits every line of its own.
		eg.setToken(first)
		if o.HTTPClient == nil {
			o.HTTPClient = eg.httpClient()
		}
	}
	if err := toolchain.CheckRequired(o.RequiredTools); err != nil {
		return nil, fmt.Errorf("required tools: %w", err)
	}
	ws, info, err := checkWorkspace(o.Workspace)
	if err != nil {
		eg.close()
		return nil, err
	}
	j := jail.New([]string{ws})
	if roots := j.Roots(); len(roots) != 1 || roots[0] != ws {
		_ = j.Close()
		return nil, fmt.Errorf("%w: %s cannot be opened", ErrWorkspace, o.Workspace)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Server{
		workspace: ws,
		wsInfo:    info,
		tokenFile: o.TokenFile,
		log:       log,
		jail:      j,
		shutdown:  o.ShutdownTimeout,
		requests:  mcpcancel.New(callIDHeader),
		toolchain: newToolchainCache(o),
		egress:    eg,
	}
	s.tokens.Store(&sums)
	s.stopCtx, s.stopCalls = context.WithCancel(context.Background())
	s.toolchain.base = s.stopCtx
	if s.shutdown <= 0 {
		s.shutdown = DefaultShutdownTimeout
	}
	var bashEnv func() []string
	var readDirs []string
	if eg != nil {
		bashEnv, readDirs = eg.Env, []string{eg.dir}
	}
	conf := sandboxConfinement(o.TokenFile, readDirs)
	s.confinement = conf.String()
	s.local = hands.Sandbox(hands.SandboxOptions{Jail: j, Workspace: ws, HTTPClient: o.HTTPClient, MaxOutputBytes: o.MaxOutputBytes, Confiner: conf,
		Env: bashEnv})
	version := o.Version
	if version == "" {
		version = "dev"
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: ServerName, Version: version}, &mcp.ServerOptions{
		Logger: s.sdkLogger(),
		// The tools and the toolchain resource are fixed at start: no
		// listChanged (the SDK's default would say true). No prompts.
		Capabilities: &mcp.ServerCapabilities{Logging: &mcp.LoggingCapabilities{}, //nolint:staticcheck // SA1019: deprecated at 2026-07-28; kept for 2025-11-25 clients, as the SDK's default had it
			Tools: &mcp.ToolCapabilities{}, Resources: &mcp.ResourceCapabilities{}},
	})
	list, err := s.local.Tools(context.Background())
	if err != nil {
		_ = j.Close()
		return nil, err
	}
	for _, t := range list {
		s.mcp.AddTool(&mcp.Tool{
			Name:        t.Name,
			Description: t.Description,
			InputSchema: t.InputSchema, // json.RawMessage: sent unchanged
		}, s.toolHandler(t.Name))
	}
	s.addToolchainResource()
	if o.TracerProvider != nil {
		s.mcp.AddReceivingMiddleware(mcptrace.ServerMiddleware(o.TracerProvider, mcptrace.TransportTCP))
	}
	s.handler = s.buildHandler()
	return s, nil
}

// readTokenFile reads the accepted tokens, one per line, and the first
// (the newest of a rotation); a line that is not a usable token fails the
// whole file, so that a typo is found rather than silently accepted.
func readTokenFile(path string) ([][sha256.Size]byte, string, error) {
	lines, err := config.ReadSecretLines(path)
	if err != nil {
		return nil, "", fmt.Errorf("%w: token file: %w", ErrNoToken, err)
	}
	sums := make([][sha256.Size]byte, 0, len(lines))
	for i, l := range lines {
		if err := checkToken(l); err != nil {
			return nil, "", fmt.Errorf("token file line %d: %w", i+1, err)
		}
		sums = append(sums, sha256.Sum256([]byte(l)))
	}
	return sums, lines[0], nil
}

// reloadTokens re-reads the token file. A file that cannot be read or
// holds a bad line is not applied: the tokens already loaded stay valid
// (a half-written update must not lock the gateway out).
func (s *Server) reloadTokens() {
	sums, first, err := readTokenFile(s.tokenFile)
	if err != nil {
		s.log.Warn("token file not re-read; the tokens loaded before stay valid", "error", err)
		return
	}
	if s.egress != nil {
		s.egress.setToken(first)
	}
	if old := s.tokens.Load(); old != nil && slices.Equal(*old, sums) {
		return
	}
	s.tokens.Store(&sums)
	s.log.Info("token file re-read", "tokens", len(sums))
}

func checkToken(tok string) error {
	if tok == "" {
		return ErrNoToken
	}
	if len(tok) < MinTokenLen || strings.IndexFunc(tok, func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0 {
		return ErrWeakToken
	}
	return nil
}

// checkWorkspace returns the workspace as an absolute path with symlinks
// in its parents resolved, and its FileInfo.
func checkWorkspace(dir string) (string, os.FileInfo, error) {
	if strings.TrimSpace(dir) == "" {
		return "", nil, fmt.Errorf("%w: no workspace directory given", ErrWorkspace)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %s: %w", ErrWorkspace, dir, err)
	}
	fi, err := os.Lstat(abs)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return "", nil, fmt.Errorf("%w: %s does not exist", ErrWorkspace, dir)
	case err != nil:
		return "", nil, fmt.Errorf("%w: %s: %w", ErrWorkspace, dir, err)
	case fi.Mode()&os.ModeSymlink != 0:
		return "", nil, fmt.Errorf("%w: %s is a symlink; give the directory itself", ErrWorkspace, dir)
	case !fi.IsDir():
		return "", nil, fmt.Errorf("%w: %s is not a directory", ErrWorkspace, dir)
	}
	// The last component is not a symlink; resolve any in the parents so
	// the jail, bash's directory and readyz all name the same path.
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %s: %w", ErrWorkspace, dir, err)
	}
	return resolved, fi, nil
}

// Workspace returns the workspace directory the server serves (absolute,
// symlinks in its parents resolved).
func (s *Server) Workspace() string { return s.workspace }

// Tools lists the tools the server exposes, as tools.Local defines them.
func (s *Server) Tools() []tools.Tool {
	list, _ := s.local.Tools(context.Background())
	return list
}

// Handler serves POST /mcp (bearer auth), GET /healthz and GET /readyz.
func (s *Server) Handler() http.Handler { return s.handler }

// Close releases the workspace handles. Calls after Close fail.
func (s *Server) Close() error {
	s.stopCalls()
	s.egress.close()
	return s.jail.Close()
}

func (s *Server) buildHandler() http.Handler {
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s.mcp }, &mcp.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		Logger:              s.sdkLogger(),
		MaxRequestBodyBytes: maxRequestBodyBytes,
		// A call whose HTTP request goes away (the gateway's deadline, a
		// dropped connection) is cancelled, which kills its bash process
		// group. Applies to the 2026-07-28 protocol the go-sdk client uses.
		PropagateRequestCancellation: true,
		// DNS-rebinding protection stays on: see the package doc.
	})
	requireToken := auth.RequireBearerToken(s.verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	mux := http.NewServeMux()
	// Every method on /mcp is authenticated; the SDK answers GET and
	// DELETE with 405 in stateless mode, but only after auth.
	mux.Handle("/mcp", requireToken(s.requests.Bind(streamable)))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeText(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := s.Ready(); err != nil {
			writeText(w, http.StatusServiceUnavailable, "not ready: workspace unavailable")
			return
		}
		writeText(w, http.StatusOK, "ok")
	})
	return unbuffered.SSE(mux)
}

// sdkLogger is the logger handed to the go-sdk: warnings and errors only
// (at info it logs several lines per stateless POST).
func (s *Server) sdkLogger() *slog.Logger {
	return slog.New(minLevel{Handler: s.log.Handler(), min: slog.LevelWarn})
}

type minLevel struct {
	slog.Handler
	min slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.Handler.Enabled(ctx, l)
}

func (m minLevel) WithAttrs(a []slog.Attr) slog.Handler {
	return minLevel{Handler: m.Handler.WithAttrs(a), min: m.min}
}

func (m minLevel) WithGroup(name string) slog.Handler {
	return minLevel{Handler: m.Handler.WithGroup(name), min: m.min}
}

func writeText(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_, _ = fmt.Fprintln(w, body)
}

// untilShutdown is ctx, also cancelled at the shutdown deadline.
func (s *Server) untilShutdown(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.stopCtx, cancel)
	return ctx, func() { stop(); cancel() }
}

// verify is the bearer check: constant time over fixed-length digests,
// against every accepted token without stopping at a match.
func (s *Server) verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	sum := sha256.Sum256([]byte(token))
	ok := 0
	for _, t := range *s.tokens.Load() {
		ok |= subtle.ConstantTimeCompare(sum[:], t[:])
	}
	if ok != 1 {
		return nil, auth.ErrInvalidToken
	}
	return &auth.TokenInfo{}, nil
}

// Ready reports whether the workspace is still the directory the server
// started on.
func (s *Server) Ready() error {
	fi, err := os.Lstat(s.workspace)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %w", ErrWorkspace, err)
	case fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir():
		return fmt.Errorf("%w: no longer a directory", ErrWorkspace)
	case !os.SameFile(fi, s.wsInfo):
		return fmt.Errorf("%w: replaced since start", ErrWorkspace)
	}
	return nil
}

// Call outcomes, as logged.
const (
	outcomeOK        = "ok"
	outcomeToolError = "tool_error"
	outcomeError     = "error"
)

// toolHandler adapts one tools.Local tool to a raw MCP tool handler.
func (s *Server) toolHandler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		t0 := time.Now()
		ctx, cancel := s.requests.CallContext(ctx, req)
		defer cancel()
		ctx, stop := s.untilShutdown(ctx)
		defer stop()
		var args json.RawMessage
		if req.Params != nil {
			args = req.Params.Arguments
		}
		res, err := s.local.Call(ctx, name, args)
		outcome := outcomeOK
		switch {
		case err != nil:
			outcome = outcomeError
		case res.IsError:
			outcome = outcomeToolError
		}
		attrs := []any{"tool", name, "outcome", outcome, "duration_ms", time.Since(t0).Milliseconds()}
		if err != nil {
			// Local.Call errors are a cancelled context or an unknown tool,
			// never tool output.
			attrs = append(attrs, "error", errWord(err))
		}
		s.log.Info("tool call", attrs...)
		if err != nil {
			if errors.Is(err, tools.ErrUnknownTool) {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", name)}
			}
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tool call interrupted: " + errWord(err)}
		}
		return &mcp.CallToolResult{
			Content: []mcp.Content{&mcp.TextContent{Text: res.Output}},
			IsError: res.IsError,
		}, nil
	}
}

// errWord names an executor error without detail.
func errWord(err error) string {
	switch {
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "deadline exceeded"
	case errors.Is(err, tools.ErrUnknownTool):
		return "unknown tool"
	}
	return "failed"
}

// Run listens on addr and serves until ctx ends, then shuts down
// gracefully (see Serve).
func (s *Server) Run(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("sandbox: listen: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx ends. It logs the bound address as
// `msg="garra sandbox listening" addr=HOST:PORT` (parseable when the port
// was 0). When ctx ends it stops accepting, lets in-flight calls finish for
// up to the shutdown timeout, then closes what is left (cancelling those
// calls). It returns nil after a shutdown caused by ctx, else the serve
// error. Serve closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		// No ReadTimeout/WriteTimeout: a bash call may legitimately run
		// for up to 10 minutes; each call carries its own deadline.
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	names := tools.Names(s.Tools())
	attrs := []any{"addr", ln.Addr().String(), "workspace", s.workspace, "tools", strings.Join(names, ","), "bash_confinement", s.confinement}
	if s.egress != nil {
		attrs = append(attrs, "egress_proxy", s.egress.proxy.Host, "trust_bundle", s.egress.bundle)
	}
	s.log.Info("garra sandbox listening", attrs...)
	if s.tokenFile != "" {
		wctx, stopWatch := context.WithCancel(ctx)
		defer stopWatch()
		go func() {
			_ = filewatch.Run(wctx, filewatch.Options{Paths: []string{s.tokenFile}, Logger: s.log}, s.reloadTokens)
		}()
	}
	// Discover once at start, so the gateway's first read of the
	// toolchain does not wait for it.
	s.toolchain.warm()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("sandbox: serve: %w", err)
	case <-ctx.Done():
	}
	s.log.Info("garra sandbox shutting down", "grace", s.shutdown.String())
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.shutdown)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		// Cancel what still runs (its bash process group is killed) and
		// give the calls a moment to answer with their error before the
		// connections close.
		s.log.Warn("garra sandbox: in-flight calls cut at the shutdown deadline")
		s.stopCalls()
		cut, cancelCut := context.WithTimeout(context.Background(), cutGrace)
		defer cancelCut()
		if err := srv.Shutdown(cut); err != nil {
			_ = srv.Close()
		}
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("sandbox: serve: %w", err)
	}
	s.log.Info("garra sandbox stopped")
	return nil
}

// sandboxConfinement is bash's second layer inside the pod: the image holds
// nothing of the host, so every call may read all of it but the token
// file, and write only the workspace, the pod's home (where toolchains are
// installed) and its private TMPDIR. The pod and its NetworkPolicy remain
// the boundary; a kernel without Landlock leaves them alone.
func sandboxConfinement(tokenFile string, read []string) *hands.Confinement {
	var hide, write []string
	if tokenFile != "" {
		hide = append(hide, tokenFile)
	}
	if home := os.Getenv("HOME"); home != "" && home != "/" {
		write = append(write, home)
	}
	return hands.NewConfinement(config.Default(), hands.ConfineOptions{Role: hands.RoleSandbox, Hide: hide, Read: append([]string{"/"}, read...), Write: write})
}
