package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/garraia/garra/internal/agent"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/hands"
	"github.com/garraia/garra/internal/jail"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/toolchain"
	"github.com/garraia/garra/internal/tools"
)

// WorkspaceDir is where an orchestrator's local workspace lives when it has
// no sandbox pod: <data_dir>/workspace/<first 32 hex of SHA-256 of
// "mcp-http-orquestrador:<name>">. The name is hashed so that the path
// carries no caller-chosen text.
func WorkspaceDir(dataDir, orchestrator string) string {
	sum := sha256.Sum256([]byte("mcp-http-orquestrador:" + orchestrator))
	return filepath.Join(dataDir, "workspace", hex.EncodeToString(sum[:])[:32])
}

// callerAgent runs one caller's garra_agent calls under a policy.
type callerAgent struct {
	g *policy
	c mcppolicy.Caller
}

// RunAgent runs garra_agent for the caller: prompt in and everything out
// redacted with the operator's patterns, session
// mcp-http-<caller>-<uuid>, tools in the caller's sandbox pod or its own
// local workspace; the call's OnToolCall (nil = no progress asked for) is
// told of each tool call. Every failure is in the envelope.
func (a callerAgent) RunAgent(ctx context.Context, req agent.Call) (agent.Envelope, error) {
	g, c := a.g, a.c
	r := &agent.Runner{Redactor: g.red, Now: g.now}
	p, err := g.askCore.Provider(req.Provider)
	if err != nil {
		p = agent.UnavailableProvider{Err: err}
	}
	r.Provider = p
	exec, closeExec, err := g.executorFor(ctx, c)
	if err != nil {
		g.log.Error("agent executor unavailable", "caller", c.Name, "error", err)
		exec = failingExecutor{err}
	}
	defer closeExec()
	r.Executor = exec
	var environment string
	if req.SystemPrompt == "" {
		environment = g.sandboxToolchain(ctx, c)
	}
	env := r.Run(ctx, agent.Request{
		Message:       req.Message,
		Provider:      req.Provider,
		Model:         req.Model,
		SystemPrompt:  req.SystemPrompt,
		Environment:   environment,
		Timeout:       req.Timeout,
		SessionPrefix: "mcp-http-" + c.Name,
		OnToolCall:    req.OnToolCall,
	})
	return env, nil
}

// Bounds on reading a sandbox's toolchain. The sandbox serves it from
// memory once its first discovery (at start) is done, so only a sandbox
// just started or in trouble is slow: a run then goes on without it after
// toolchainPromptTimeout rather than waiting; an explicit read of the
// resource waits up to toolchainReadTimeout.
const (
	toolchainPromptTimeout = 2 * time.Second
	toolchainReadTimeout   = 5 * time.Second
)

// sandboxToolchain is c's sandbox toolchain as a paragraph of the system
// prompt, or "" when c has no sandbox or it cannot be read (the run goes
// on; the model then finds out with bash).
func (g *policy) sandboxToolchain(ctx context.Context, c mcppolicy.Caller) string {
	if c.Sandbox == nil || c.Sandbox.URL == "" {
		return ""
	}
	rep, err := g.readSandboxToolchain(ctx, c, toolchainPromptTimeout)
	if err != nil {
		g.log.Warn("sandbox toolchain not read; the agent's prompt does not name it", "caller", c.Name, "error", err)
		return ""
	}
	return toolchain.Summary(rep)
}

// readSandboxToolchain reads garra://sandbox/toolchain from c's own
// sandbox with c's sandbox token, within bound, and sanitises it: the
// sandbox is where bash runs, so what it says is data.
func (g *policy) readSandboxToolchain(ctx context.Context, c mcppolicy.Caller, bound time.Duration) (toolchain.Report, error) {
	token, err := c.Sandbox.TokenWith(g.getenv, g.secrets)
	if err != nil {
		return toolchain.Report{}, fmt.Errorf("sandbox token: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	text, err := tools.NewRemote(tools.RemoteOptions{URL: c.Sandbox.URL, Token: token, TracerProvider: g.tracing}).ReadResource(ctx, toolchain.URI)
	if err != nil {
		return toolchain.Report{}, err
	}
	var rep toolchain.Report
	if err := json.Unmarshal([]byte(text), &rep); err != nil {
		return toolchain.Report{}, fmt.Errorf("decode the toolchain: %w", err)
	}
	return toolchain.Sanitize(rep), nil
}

// executorFor picks where c's agent tools run: in its sandbox pod (plus
// web_search served here when the gateway holds a Brave key), or in its
// local workspace. It fails closed: no token for the sandbox, or an idle
// sandbox that does not wake within ctx, is an executor error; a local workspace that is not materialized gets the
// refusing executor (see localExecutor).
func (g *policy) executorFor(ctx context.Context, c mcppolicy.Caller) (tools.Executor, func(), error) {
	noop := func() {}
	if c.Sandbox != nil && c.Sandbox.URL != "" {
		token, err := c.Sandbox.TokenWith(g.getenv, g.secrets)
		if err != nil {
			return nil, noop, fmt.Errorf("sandbox token: %w", err)
		}
		release, err := g.wakeSandbox(ctx, c, token)
		if err != nil {
			return nil, noop, err
		}
		remote := tools.NewRemote(tools.RemoteOptions{URL: c.Sandbox.URL, Token: token, TracerProvider: g.tracing})
		if key := g.cfg.LLM.Brave.APIKey; key != "" {
			composed, err := newWithWebSearch(remote, key, g.cfg.LLM.Brave.BaseURL)
			if err != nil {
				release()
				return nil, noop, err
			}
			return composed, release, nil
		}
		return remote, release, nil
	}
	dir := WorkspaceDir(g.cfg.DataDirPath(), c.Name)
	j, err := openWorkspace(dir)
	if err != nil {
		g.log.Warn("agent workspace not materialized: file tools deny every path and bash is refused",
			"caller", c.Name, "reason", err.Error(), "fix", "restart the gateway to create it, or remove what is in its place")
		return g.localExecutor(nil, ""), noop, nil
	}
	return g.localExecutor(j, dir), func() { _ = j.Close() }, nil
}

// localExecutor is the in-process executor on workspace dir, confined by
// j. With no workspace (j nil, dir ""), every file tool denies every path
// and bash, where the profile would offer it, is listed but refuses to
// run: the tools the model sees do not change, only what they may touch.
func (g *policy) localExecutor(j *jail.Jail, dir string) tools.Executor {
	bash := hands.Bash(g.cfg, hands.Exposure(g.cfg, nil), dir, g.confinement())
	return hands.Local(g.cfg, j, dir, bash, g.egress)
}

// confinement is the kernel confinement of bash in local workspaces: each
// call may write only its own workspace and reach nothing of the gateway's
// (config, data, credential files) nor any other workspace.
func (g *policy) confinement() *hands.Confinement {
	return hands.NewConfinement(g.cfg, hands.ConfineOptions{Role: hands.RoleGateway, ConfigPath: g.configPath})
}

// webFetchGuard is the egress guard of web_fetch in local workspaces: the
// gateway shares its host with its own /metrics and, in a cluster, with the
// metadata endpoint and every Service, so only public addresses and the
// operator's web_fetch_allowed_hosts are reachable. An entry that does not
// parse is skipped with a warning, like a bad redact pattern: it admits
// nothing, and config check names it. Sandbox pods are not covered: their
// NetworkPolicy is the boundary, and their bash reaches whatever their
// web_fetch could.
func webFetchGuard(m config.MCPHTTP, log *slog.Logger) *tools.EgressGuard {
	var hosts []string
	for i, h := range m.WebFetchAllowedHosts {
		if err := config.ParseWebFetchHost(h); err != nil {
			log.Warn("web_fetch allowed host ignored", "field", fmt.Sprintf("gateway.mcp_http.web_fetch_allowed_hosts[%d]", i),
				"error", err, "fix", "run garra config check")
			continue
		}
		hosts = append(hosts, h)
	}
	return tools.NewEgressGuard(hosts)
}

// materializeWorkspaces creates, at boot, the local workspace of every
// orchestrator that can run garra_agent without a sandbox pod. This is the
// only place one is created: a workspace missing (or replaced) later is
// not recreated by a call, which fails closed instead.
func (g *policy) materializeWorkspaces() {
	logged := false
	for _, c := range g.callers.byName {
		if c.IsOwner() || (c.Sandbox != nil && c.Sandbox.URL != "") || !slices.Contains(mcppolicy.Visible(c, g.limits), mcppolicy.ToolAgent) {
			continue
		}
		if !logged {
			hands.LogConfinement(g.log, hands.Exposure(g.cfg, nil), g.confinement())
			logged = true
		}
		if err := materializeWorkspace(WorkspaceDir(g.cfg.DataDirPath(), c.Name)); err != nil {
			g.log.Warn("agent workspace not materialized: its file tools deny every path and bash is refused",
				"caller", c.Name, "reason", err.Error())
		}
	}
}

// materializeWorkspace creates dir (and <data_dir>/workspace) owner-only,
// and checks that what is there is a plain directory.
func materializeWorkspace(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("create workspace parent: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create workspace: %w", err)
	}
	return plainDir(dir)
}

// plainDir refuses anything but a directory that is not a symlink: a
// symlink planted there would widen the jail to wherever it points.
func plainDir(dir string) error {
	fi, err := os.Lstat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("the workspace does not exist")
	case err != nil:
		return fmt.Errorf("workspace: %w", err)
	case fi.Mode()&os.ModeSymlink != 0:
		return errors.New("the workspace is a symlink")
	case !fi.IsDir():
		return errors.New("the workspace is not a directory")
	}
	return nil
}

// openWorkspace opens the jail on an existing, plain workspace directory.
// The jail resolves symlinks, so a directory swapped for a symlink after
// the check would open elsewhere: the root it opened must be dir itself.
func openWorkspace(dir string) (*jail.Jail, error) {
	if err := plainDir(dir); err != nil {
		return nil, err
	}
	parent, err := filepath.EvalSymlinks(filepath.Dir(dir))
	if err != nil {
		return nil, fmt.Errorf("workspace parent: %w", err)
	}
	j := jail.New([]string{dir})
	if roots := j.Roots(); len(roots) != 1 || roots[0] != filepath.Join(parent, filepath.Base(dir)) {
		_ = j.Close()
		return nil, errors.New("the workspace changed while it was opened")
	}
	return j, nil
}

// failingExecutor stands in for an executor that could not be built; the
// agent loop reports its error as the run's failure.
type failingExecutor struct{ err error }

func (f failingExecutor) Tools(context.Context) ([]tools.Tool, error) { return nil, f.err }

func (f failingExecutor) Call(context.Context, string, json.RawMessage) (tools.Result, error) {
	return tools.Result{}, f.err
}
