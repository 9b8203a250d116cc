package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// Values of agent.confinement.
const (
	// ConfinementRequired: bash never runs unconfined; where the kernel
	// offers no Landlock it is refused.
	ConfinementRequired = "required"
	// ConfinementBestEffort: bash is confined as far as the kernel allows,
	// and runs unconfined, with a warning, where it cannot be.
	ConfinementBestEffort = "best-effort"
)

// Values of agent.egress.
const (
	EgressInternet = "internet"
	EgressNone     = "none"
)

// checkConfinement validates agent.confinement, agent.egress and
// agent.expose.
func (c *Config) checkConfinement() []Problem {
	var ps []Problem
	a := c.Agent
	if m := a.Confinement; m != "" && m != ConfinementRequired && m != ConfinementBestEffort {
		ps = append(ps, Problem{Field: "agent.confinement", Message: fmt.Sprintf("%q is not required or best-effort", m)})
	}
	if e := a.Egress; e != "" && e != EgressInternet && e != EgressNone {
		ps = append(ps, Problem{Field: "agent.egress", Message: fmt.Sprintf("%q is not internet or none", e)})
	}
	for i, p := range a.Expose {
		if !filepath.IsAbs(p) && p != "~" && !strings.HasPrefix(p, "~/") {
			ps = append(ps, Problem{Field: fmt.Sprintf("agent.expose[%d]", i), Message: fmt.Sprintf("%q is not an absolute path or one under ~/", p)})
		}
	}
	return ps
}

// LocalWorkspaces is how many orchestrators may run garra_agent on a local
// workspace of the gateway (agent in their tools, no sandbox pod): with
// more than one, one tenant's bash shares a host with another's.
func (c *Config) LocalWorkspaces() int {
	n := 0
	for _, o := range c.Gateway.MCPHTTP.Orchestrators {
		if slices.Contains(o.Tools, "agent") && !slices.Contains(o.DenyTools, "agent") && (o.Sandbox == nil || o.Sandbox.URL == "") {
			n++
		}
	}
	return n
}

// ExposedPaths is agent.expose with a leading ~ expanded.
func (c *Config) ExposedPaths() []string {
	out := make([]string, 0, len(c.Agent.Expose))
	for _, p := range c.Agent.Expose {
		out = append(out, filepath.Clean(expandHome(p)))
	}
	return out
}

// PrivatePaths are the paths of this configuration that no tool child may
// reach: the data directory (the store, the audit file, every local
// workspace), the audit file wherever it is, and every credential file
// (the owner's key, the orchestrators' tokens, the sandbox tokens, the
// DSN). The config file itself is the caller's to add: c does not know
// where it was read from.
func (c *Config) PrivatePaths() []string {
	out := []string{c.DataDirPath(), c.AuditPath()}
	add := func(p string) {
		if p != "" {
			out = append(out, expandHome(p))
		}
	}
	add(c.Gateway.APIKeyFile)
	add(c.Store.DSNFile)
	for _, o := range c.Gateway.MCPHTTP.Orchestrators {
		add(o.KeyFile)
		if o.Sandbox != nil {
			add(o.Sandbox.TokenFile)
		}
	}
	return out
}
