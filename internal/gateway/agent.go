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
	"os/exec"
	"path/filepath"
	"time"

	"github.com/garraia/garra/internal/agent"
	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/jail"
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

// runAgent runs garra_agent for c: prompt in and everything out redacted
// with the operator's patterns, session mcp-http-<caller>-<uuid>, tools in
// the caller's sandbox pod or its own local workspace.
func (g *Gateway) runAgent(ctx context.Context, c Caller, req ask.Request, timeout time.Duration) agent.Envelope {
	r := &agent.Runner{Redactor: g.red, Now: g.now}
	p, err := g.askCore.Provider(req.Provider)
	if err != nil {
		p = agent.UnavailableProvider{Err: err}
	}
	r.Provider = p
	exec, closeExec, err := g.executorFor(c)
	if err != nil {
		g.log.Error("agent executor unavailable", "caller", c.Name, "error", err)
		exec = failingExecutor{err}
	}
	defer closeExec()
	r.Executor = exec
	env := r.Run(ctx, agent.Request{
		Message:       req.Message,
		Provider:      req.Provider,
		Model:         req.Model,
		SystemPrompt:  req.SystemPrompt,
		Timeout:       timeout,
		SessionPrefix: "mcp-http-" + c.Name,
	})
	return env
}

// executorFor picks where c's agent tools run. It fails closed: no token for
// the sandbox, or a workspace that is a symlink, is an executor error.
func (g *Gateway) executorFor(c Caller) (tools.Executor, func(), error) {
	noop := func() {}
	if c.Sandbox != nil && c.Sandbox.URL != "" {
		token := ""
		if c.Sandbox.TokenEnv != "" {
			token = g.getenv(c.Sandbox.TokenEnv)
		}
		if token == "" {
			return nil, noop, fmt.Errorf("sandbox token variable %s is not set", c.Sandbox.TokenEnv)
		}
		return tools.NewRemote(tools.RemoteOptions{URL: c.Sandbox.URL, Token: token}), noop, nil
	}
	dir := WorkspaceDir(g.cfg.DataDirPath(), c.Name)
	if err := ensureWorkspace(dir); err != nil {
		return nil, noop, err
	}
	j := jail.New([]string{dir})
	if len(j.Roots()) != 1 {
		return nil, noop, errors.New("workspace did not resolve")
	}
	exposure := tools.DecideBash(tools.ExposureInput{
		Profile: g.cfg.Execution.Profile, Mode: g.cfg.Agent.Sandbox.Mode, Backend: g.cfg.Agent.Sandbox.Backend,
		Allowlist: g.cfg.Agent.Sandbox.Allowlist, LookPath: exec.LookPath,
	})
	var bash tools.BashRunner
	switch exposure.Where {
	case tools.BashHost:
		bash = &tools.HostRunner{DefaultDir: dir}
	case tools.BashContainer:
		bash = tools.NewContainerRunner(exposure.Backend, g.cfg.Agent.Sandbox.Image)
	}
	local := tools.NewLocal(tools.LocalOptions{Jail: j, WorkingDir: dir, Bash: bash, BraveAPIKey: g.cfg.LLM.Brave.APIKey, Egress: g.egress})
	return local, func() { _ = j.Close() }, nil
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

// ensureWorkspace creates the workspace on first use and refuses one that
// is not a plain directory (a symlink planted there would widen the jail).
func ensureWorkspace(dir string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return fmt.Errorf("create workspace parent: %w", err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("create workspace: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if !fi.IsDir() || fi.Mode()&os.ModeSymlink != 0 {
		return errors.New("workspace is not a plain directory")
	}
	return nil
}

// failingExecutor stands in for an executor that could not be built; the
// agent loop reports its error as the run's failure.
type failingExecutor struct{ err error }

func (f failingExecutor) Tools(context.Context) ([]tools.Tool, error) { return nil, f.err }

func (f failingExecutor) Call(context.Context, string, json.RawMessage) (tools.Result, error) {
	return tools.Result{}, f.err
}
