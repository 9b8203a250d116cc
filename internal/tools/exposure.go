package tools

import (
	"fmt"
	"os/exec"
	"slices"
	"strings"
)

// Where says where bash runs, if anywhere.
type Where int

// Where values.
const (
	// BashNone: bash is not registered; the model is told there is no shell.
	BashNone Where = iota
	// BashHost: bash runs on this machine (isolated-pod only: the pod is
	// the boundary). Use HostRunner.
	BashHost
	// BashContainer: every command runs in a docker/podman container.
	// Use ContainerRunner with Backend.
	BashContainer
)

// String returns "none", "host" or "container", for logs.
func (w Where) String() string {
	switch w {
	case BashHost:
		return "host"
	case BashContainer:
		return "container"
	}
	return "none"
}

// BashExposure is the decision for one server (or one call): where bash
// runs, with which backend, and, when it does not run at all, the one boot
// warning that names the fix.
type BashExposure struct {
	Where Where
	// Backend is "docker" or "podman" when Where is BashContainer.
	Backend string
	// Warning is set exactly when Where is BashNone.
	Warning string
}

// ExposureInput is what the #1272 decision looks at: execution.profile and
// agent.sandbox. LookPath checks that the backend binary is installed
// (exec.LookPath when nil). Values are compared trimmed and
// case-insensitively; empty Profile means standard and empty Mode off.
type ExposureInput struct {
	Profile   string   // standard | isolated-pod
	Mode      string   // off | all | allowlist
	Backend   string   // docker | podman | ssh | ""
	Allowlist []string // tools sandboxed when Mode is allowlist
	Elevated  []string // tools exempt from the sandbox when Mode is all
	LookPath  func(string) (string, error)
}

// The fix printed when bash is not registered on the standard profile
// (the spec's Migration text).
const standardFix = "to enable it, contain it with agent.sandbox.mode: all and agent.sandbox.backend: docker (or podman; the binary must be installed), " +
	"or, only if this process really runs in a disposable pod, set execution.profile: isolated-pod"

// DecideBash decides whether and how bash is offered, by the table below
// (the stdio spec's bash exposure table). It is a
// pure function of its input (plus LookPath) and never infers the profile
// from the environment.
//
//	profile       sandbox                                                  bash
//	standard      off, ssh, bash elevated, allowlist without bash,
//	              no backend, no binary                                    none
//	standard      all / allowlist with bash + docker|podman present        container
//	isolated-pod  off, bash elevated, allowlist without bash               host
//	isolated-pod  all / allowlist with bash + docker|podman present        container
//	isolated-pod  sandbox required but unusable (ssh, none, no binary)     none
//
// "bash elevated" is mode all with bash in agent.sandbox.elevated: bash is
// then not required to be sandboxed, which only the pod may contain. In
// mode allowlist an explicit listing wins over elevated (the contained
// reading of a contradictory configuration), as in mode off elevated
// changes nothing.
//
// An unknown profile or mode is treated as a misconfiguration: bash is not
// registered (fail-closed) and the warning says which value is wrong.
func DecideBash(in ExposureInput) BashExposure {
	profile := norm(in.Profile)
	if profile == "" {
		profile = "standard"
	}
	mode := norm(in.Mode)
	if mode == "" {
		mode = "off"
	}
	backend := norm(in.Backend)
	lookPath := in.LookPath
	if lookPath == nil {
		lookPath = exec.LookPath
	}

	if profile != "standard" && profile != "isolated-pod" {
		return none("execution.profile %q is not standard or isolated-pod; %s", in.Profile, standardFix)
	}
	var sandboxed bool
	switch mode {
	case "off":
	case "all":
		sandboxed = !lists(in.Elevated, ToolBash)
	case "allowlist":
		sandboxed = lists(in.Allowlist, ToolBash)
	default:
		return none("agent.sandbox.mode %q is not off, all or allowlist; %s", in.Mode, standardFix)
	}

	if !sandboxed {
		if profile == "isolated-pod" {
			return BashExposure{Where: BashHost}
		}
		why := "agent.sandbox.mode is off"
		switch mode {
		case "allowlist":
			why = "agent.sandbox.allowlist does not include bash"
		case "all":
			why = "agent.sandbox.elevated lists bash, which would run it on this host (remove it from the list)"
		}
		return none("the execution profile is standard and %s; %s", why, standardFix)
	}

	// bash must be sandboxed: is the sandbox usable?
	var why string
	switch backend {
	case "docker", "podman":
		if _, err := lookPath(backend); err != nil {
			why = fmt.Sprintf("agent.sandbox.backend is %s but the %s binary is not installed or not on PATH", backend, backend)
		}
	case "":
		why = "agent.sandbox has no backend"
	case "ssh":
		why = "agent.sandbox.backend ssh would send commands to another machine"
	default:
		why = fmt.Sprintf("agent.sandbox.backend %q is not docker or podman", in.Backend)
	}
	if why == "" {
		return BashExposure{Where: BashContainer, Backend: backend}
	}
	if profile == "isolated-pod" {
		return none("the sandbox is required for bash but unusable: %s; to enable it, set agent.sandbox.backend: docker or podman with the binary installed, "+
			"or set agent.sandbox.mode: off to run bash on the pod host", why)
	}
	return none("the execution profile is standard and %s; %s", why, standardFix)
}

func none(format string, a ...any) BashExposure {
	return BashExposure{Where: BashNone, Warning: "bash is not registered: " + fmt.Sprintf(format, a...)}
}

func norm(s string) string { return strings.ToLower(strings.TrimSpace(s)) }

// lists reports whether names holds tool, compared as norm does.
func lists(names []string, tool string) bool {
	return slices.ContainsFunc(names, func(s string) bool { return norm(s) == tool })
}
