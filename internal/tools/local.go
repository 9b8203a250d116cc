package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/garraia/garra/internal/jail"
	"github.com/garraia/garra/internal/shellgate"
)

// Tool names, as the model sees them.
const (
	ToolBash      = "bash"
	ToolFileRead  = "file_read"
	ToolFileWrite = "file_write"
	ToolGitDiff   = "git_diff"
	ToolWebFetch  = "web_fetch"
	ToolWebSearch = "web_search"
)

// DefaultBraveBaseURL is the Brave Search API endpoint used by web_search.
const DefaultBraveBaseURL = "https://api.search.brave.com"

// LocalOptions configures a Local executor. A Local is usually built per
// agent call, because Jail and WorkingDir belong to the call.
type LocalOptions struct {
	// Jail confines file_read and file_write. When the call named a
	// working_dir it is already narrowed to it. Nil denies every path.
	Jail *jail.Jail
	// WorkingDir is the call's working_dir: absolute and validated by the
	// caller (inside the jail), or "" when the call gave none. It is where
	// bash runs and relative git_diff paths resolve; without it git_diff
	// uses the jail's first root and bash gets "" (see BashRunner).
	WorkingDir string
	// Bash runs shell commands. Nil means bash is not registered at all
	// (see DecideBash for when it may be set).
	Bash BashRunner
	// BraveAPIKey enables web_search; "" means web_search is not
	// registered.
	BraveAPIKey string
	// BraveBaseURL overrides DefaultBraveBaseURL (tests, proxies).
	BraveBaseURL string
	// HTTPClient is used by web_fetch and web_search. Nil means a client
	// with a 30 s timeout.
	HTTPClient *http.Client
	// Egress, when set, confines web_fetch to public addresses and the
	// guard's allowed hosts; web_fetch then uses HTTPClient's settings
	// with the guard's transport (no proxy). Nil lets web_fetch reach any
	// address, the stdio server's default. web_search is not affected: its
	// endpoint is the operator's, not the model's, choice.
	Egress *EgressGuard
	// MaxOutputBytes caps each tool result (DefaultMaxOutputBytes when
	// not positive); longer output is cut and marked.
	MaxOutputBytes int
	// FileWriteBackup makes file_write keep a replaced file's contents as
	// <path>.bak (config agent.file_write_backup).
	FileWriteBackup bool
}

// Local runs the tools in this process (and the children it spawns). It is
// immutable after NewLocal and safe for concurrent use.
type Local struct {
	jail      *jail.Jail
	workDir   string
	bash      BashRunner
	gate      shellgate.Policy
	braveKey  string
	braveBase string
	http      *http.Client
	fetch     *http.Client // web_fetch's: http, or http through the egress guard
	guarded   bool
	maxOut    int
	backup    bool

	tools    []Tool
	handlers map[string]handler
}

type handler func(ctx context.Context, args json.RawMessage) (Result, error)

var _ Executor = (*Local)(nil)

// NewLocal builds the local executor. The tool set is fixed here: bash
// only with a runner, web_search only with a key.
func NewLocal(o LocalOptions) *Local {
	l := &Local{
		jail:      o.Jail,
		workDir:   o.WorkingDir,
		bash:      o.Bash,
		braveKey:  o.BraveAPIKey,
		braveBase: strings.TrimRight(o.BraveBaseURL, "/"),
		http:      o.HTTPClient,
		maxOut:    o.MaxOutputBytes,
		backup:    o.FileWriteBackup,
		handlers:  map[string]handler{},
	}
	if nb, ok := o.Bash.(NetworkBounder); ok && nb.NetworkBounded() {
		l.gate.NetworkBounded = true
	}
	if l.braveBase == "" {
		l.braveBase = DefaultBraveBaseURL
	}
	if l.http == nil {
		l.http = &http.Client{Timeout: 30 * time.Second}
	}
	l.fetch = l.http
	if o.Egress != nil {
		l.fetch, l.guarded = o.Egress.client(l.http), true
	}
	if l.maxOut <= 0 {
		l.maxOut = DefaultMaxOutputBytes
	}
	add := func(t Tool, h handler) {
		l.tools = append(l.tools, t)
		l.handlers[t.Name] = h
	}
	if l.bash != nil {
		add(bashTool(l.gate), l.callBash)
	}
	add(fileReadTool(), l.callFileRead)
	add(fileWriteTool(), l.callFileWrite)
	add(gitDiffTool(), l.callGitDiff)
	add(webFetchTool(l.guarded), l.callWebFetch)
	if l.braveKey != "" {
		add(webSearchTool(), l.callWebSearch)
	}
	return l
}

// Tools lists the registered tools in a stable order: bash, file_read,
// file_write, git_diff, web_fetch, web_search (absent ones skipped).
func (l *Local) Tools(context.Context) ([]Tool, error) {
	out := make([]Tool, len(l.tools))
	copy(out, l.tools)
	return out, nil
}

// Call runs one tool. Bad arguments and refusals are Results with IsError;
// the error return is for an unknown tool (ErrUnknownTool) or a context
// that ended before or during the call.
func (l *Local) Call(ctx context.Context, name string, args json.RawMessage) (Result, error) {
	h, ok := l.handlers[name]
	if !ok {
		return Result{}, fmt.Errorf("%w: %q", ErrUnknownTool, name)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	res, err := h(ctx, args)
	if err != nil {
		return Result{}, err
	}
	// Each tool caps its own output; this is the backstop for any that
	// returned more than the cap plus its marker.
	if len(res.Output) > l.maxOut+256 {
		res.Output = capOutput(res.Output, l.maxOut)
	}
	return res, nil
}

// Names returns the names of ts, in order.
func Names(ts []Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

// errorResult is a refused or failed call, shown to the model.
func errorResult(format string, a ...any) Result {
	return Result{Output: fmt.Sprintf(format, a...), IsError: true}
}

// argsError reports bad arguments for tool.
func argsError(tool string, err error) Result {
	return errorResult("%s: invalid arguments: %v", tool, err)
}

// baseDir is the directory git_diff runs in: the working_dir, or the
// jail's first root. "" when there is neither.
func (l *Local) baseDir() string {
	if l.workDir != "" {
		return l.workDir
	}
	if roots := l.jail.Roots(); len(roots) > 0 {
		return roots[0]
	}
	return ""
}

// hostDirs are the absolute directories scrubbed from messages.
func (l *Local) hostDirs() []string {
	return append([]string{l.workDir}, l.jail.Roots()...)
}

// displayPath is how a path the model gave is named back to it: relative
// to the working_dir or root it resolved in, never as a host path.
func (l *Local) displayPath(p string) string {
	if !filepath.IsAbs(p) {
		return filepath.ToSlash(filepath.Clean(p))
	}
	c := filepath.Clean(p)
	for _, d := range l.hostDirs() {
		if d == "" {
			continue
		}
		if rel, err := filepath.Rel(d, c); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.Base(c)
}
