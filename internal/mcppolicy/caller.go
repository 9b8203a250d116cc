// Package mcppolicy decides what an MCP caller may see and call, on both
// MCP surfaces: the local user of `garra mcp-server` and, on `garra
// gateway`, the owner and each orchestrator. It holds the callers, the
// operator's limits in force and the refusal chain a tool call meets
// before any argument is read, plus the argument rules that are policy
// (which models, which timeouts, which conversations). Everything here is
// a pure function of its inputs, so that what tools/list shows and what a
// call is answered can be table-tested without a server.
package mcppolicy

import (
	"github.com/garraia/garra/internal/config"
)

// Kind is which sort of caller a request comes from. The zero value is an
// orchestrator: the least trusted, which holds only what it was granted.
type Kind int

const (
	// Orchestrator is a third party of the HTTP gateway, with its own
	// token, tools list and chat scope.
	Orchestrator Kind = iota
	// Owner holds the gateway key: every gateway tool but garra_agent.
	Owner
	// Local is the one user of `garra mcp-server`, whoever spawned it.
	Local
)

// OwnerName is the audit name of the gateway key's holder; no orchestrator
// may take it (config.ReservedOrchestratorNames).
const OwnerName = config.OwnerCallerName

// LocalName is the audit name of the stdio user when its MCP client gives
// no name of its own.
const LocalName = "local"

// Caller is who sent a request.
type Caller struct {
	Kind Kind
	Name string // "owner", the orchestrator's name, or "local"
	// Grants are the MCP tool names the orchestrator's `tools` list names.
	Grants []string
	// Denied are the MCP tool names its `deny_tools` list names; a denied
	// tool is refused even when Grants has it.
	Denied []string
	// Chats restricts which conversations the caller sees; empty = none
	// for an orchestrator (see ChatInScope).
	Chats   []string
	Sandbox *config.OrchestratorSandbox
	// Auth, Identity and IdentityPersonal are how this request proved
	// the caller (authn's Identity): for audit and metrics only.
	Auth             string
	Identity         string
	IdentityPersonal bool
}

// IsOwner reports whether c holds the gateway key.
func (c Caller) IsOwner() bool { return c.Kind == Owner }

// OnGateway reports whether c reaches the HTTP gateway (owner or
// orchestrator) rather than the stdio server.
func (c Caller) OnGateway() bool { return c.Kind != Local }

// LocalUser is the caller of `garra mcp-server`.
func LocalUser() Caller { return Caller{Kind: Local, Name: LocalName} }

// OwnerCaller is the holder of the gateway key.
func OwnerCaller() Caller { return Caller{Kind: Owner, Name: OwnerName, Auth: config.AuthToken} }

// OrchestratorCaller is an orchestrator's policy and the identity its mode
// binds it to (the audit's: for an OIDC entry matched by claims that is
// the issuer and the claims). Unknown entries of its tools lists are
// ignored (`garra config check` names them).
func OrchestratorCaller(o config.Orchestrator) Caller {
	c := Caller{Name: o.Name, Chats: o.Chats, Sandbox: o.Sandbox, Auth: o.AuthMode()}
	switch c.Auth {
	case config.AuthServiceAccount:
		c.Identity = config.ServiceAccountUsername(o.Auth.ServiceAccount.Namespace, o.Auth.ServiceAccount.Name)
	case config.AuthOIDC:
		c.Identity, c.IdentityPersonal = o.IdentityKey(), true
		if a := o.Auth.OIDC; a.Subject != "" {
			c.Identity = a.Issuer + "#" + a.Subject
		}
	}
	for _, g := range o.Tools {
		if t, ok := toolByGrant[g]; ok {
			c.Grants = append(c.Grants, t)
		}
	}
	for _, g := range o.DenyTools {
		if t, ok := toolByGrant[g]; ok {
			c.Denied = append(c.Denied, t)
		}
	}
	return c
}

// HasSandbox reports whether c's agent runs in a sandbox pod.
func (c Caller) HasSandbox() bool { return c.Sandbox != nil && c.Sandbox.URL != "" }
