// Package hands assembles the agent's hands: the executor of its tools
// (file_read, file_write, git_diff, bash, web_fetch, web_search) on one
// workspace. Every role that runs those tools in its own process builds
// them here, the same way: the stdio server on a laptop, the gateway for
// an orchestrator with a local workspace, and the sandbox in its pod.
// Where bash runs (on the host, in a container, or not at all) is decided
// once, here, from the configuration (tools.DecideBash), so the three
// roles cannot drift apart on it.
package hands

import (
	"context"
	"errors"
	"net/http"
	"os/exec"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/jail"
	"github.com/garraia/garra/internal/tools"
)

// ErrNoWorkspace is what bash answers where there is no workspace (a
// gateway orchestrator's that is not materialized, a laptop with no usable
// root): the tools the model sees stay the same, only what they may touch
// shrinks to nothing.
var ErrNoWorkspace = errors.New("no workspace is available, so bash does not run")

// Exposure is where bash runs under cfg (execution.profile and
// agent.sandbox), with the warning that names the fix when it does not.
// lookPath finds the container backend; nil means exec.LookPath.
func Exposure(cfg *config.Config, lookPath func(string) (string, error)) tools.BashExposure {
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	sb := cfg.Agent.Sandbox
	return tools.DecideBash(tools.ExposureInput{
		Profile: cfg.Execution.Profile, Mode: sb.Mode, Backend: sb.Backend,
		Allowlist: sb.Allowlist, Elevated: sb.Elevated, LookPath: lookPath,
	})
}

// Bash is the runner of exposure for workspace dir: nil when bash is not
// offered, a refusal when it is but dir is "" (no workspace), else a host
// runner whose commands default to dir, each confined by conf (nil: not
// confined), or a container runner.
func Bash(cfg *config.Config, exposure tools.BashExposure, dir string, conf tools.Confiner) tools.BashRunner {
	switch {
	case exposure.Where == tools.BashNone:
		return nil
	case dir == "":
		return refused{}
	case exposure.Where == tools.BashContainer:
		return tools.NewContainerRunner(exposure.Backend, cfg.Agent.Sandbox.Image)
	default:
		return &tools.HostRunner{DefaultDir: dir, Confiner: conf}
	}
}

// refused is bash without a workspace.
type refused struct{}

func (refused) Run(context.Context, string, string) (string, int, error) {
	return "", -1, ErrNoWorkspace
}

// Local is the executor on one workspace of a laptop or a gateway: files
// confined by j (nil denies every path), bash as given (see Bash), web
// search with the configured Brave key, web_fetch through egress (nil:
// any address, the laptop's default).
func Local(cfg *config.Config, j *jail.Jail, dir string, bash tools.BashRunner, egress *tools.EgressGuard) *tools.Local {
	return tools.NewLocal(tools.LocalOptions{
		Jail: j, WorkingDir: dir, Bash: bash,
		BraveAPIKey: cfg.LLM.Brave.APIKey, BraveBaseURL: cfg.LLM.Brave.BaseURL,
		FileWriteBackup: cfg.Agent.FileWriteBackup, Egress: egress,
	})
}

// SandboxOptions are what the sandbox pod's hands need.
type SandboxOptions struct {
	// Jail confines the file tools to the workspace, Workspace.
	Jail      *jail.Jail
	Workspace string
	// HTTPClient serves web_fetch (nil: the tools' default).
	HTTPClient *http.Client
	// MaxOutputBytes caps each result (0: the tools' default).
	MaxOutputBytes int
	// Confiner confines each bash call inside the pod as a second layer
	// (nil: the pod alone).
	Confiner tools.Confiner
	// Env is asked at each bash call for variables to add (the egress
	// proxy's; nil: none).
	Env func() []string
}

// Sandbox is the executor inside a sandbox pod. The pod is the boundary,
// so bash always runs, on the pod's own host, with no process limit of
// its own: the pod's pids limit bounds it. Its NetworkPolicy decides the
// network (none, the internet, or only the gateway's egress proxy), so
// the shell gate's network rules are off there. There is no web_search:
// it stays in the gateway, which holds the key.
func Sandbox(o SandboxOptions) *tools.Local {
	return tools.NewLocal(tools.LocalOptions{
		Jail:       o.Jail,
		WorkingDir: o.Workspace,
		Bash: &tools.HostRunner{DefaultDir: o.Workspace, MaxOutputBytes: o.MaxOutputBytes, MaxProcs: -1, Confiner: o.Confiner,
			ExtraEnv: o.Env, PodNetwork: true},
		HTTPClient:     o.HTTPClient,
		MaxOutputBytes: o.MaxOutputBytes,
	})
}
