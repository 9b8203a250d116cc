// Package sandboxz is what the gateway and the operator tell each other
// about sandboxes: the wire format of the gateway's GET /sandboxz (the
// last MCP handshake with each orchestrator's sandbox, read into the
// Verified condition) and the mark of an idle sandbox's last call. It imports nothing, so the operator does not link the
// gateway to read it.
package sandboxz

import "time"

// Path is the route, on the gateway's port, behind the owner's key.
const Path = "/sandboxz"

// AnnotationLastCall on an idle-suspended sandbox's Deployment is when the
// gateway last started a call in it (RFC 3339): the gateway writes it, the
// operator's idle clock reads it.
const AnnotationLastCall = "garra.garraia.io/last-call"

// Reasons of a sandbox that is not verified (Verdict.Reason).
const (
	// TokenRefused: the sandbox answered 401 to the gateway's token.
	TokenRefused = "TokenRefused"
	// Unreachable: no MCP answer within the bound.
	Unreachable = "Unreachable"
	// NoTools: the handshake worked but the sandbox lists no tool.
	NoTools = "NoTools"
	// NoToken: the gateway has no token for the sandbox.
	NoToken = "NoToken"
	// MissingTools: the sandbox answered, but programs its
	// sandbox.requiredTools names are not on its PATH (Missing says which).
	MissingTools = "MissingTools"
)

// Verdict is the last handshake with one orchestrator's sandbox.
type Verdict struct {
	Verified bool `json:"verified"`
	// Reason is one of the reasons above when not verified.
	Reason string `json:"reason,omitempty"`
	// Message says what happened, in a sentence (never a token).
	Message string `json:"message"`
	// Tools is how many tools the sandbox listed.
	Tools int `json:"tools"`
	// Toolchain names the programs the sandbox found on its PATH, and
	// Missing the required ones it did not (from garra://sandbox/toolchain).
	Toolchain []string  `json:"toolchain,omitempty"`
	Missing   []string  `json:"missing,omitempty"`
	CheckedAt time.Time `json:"checked_at"`
}

// Report is GET /sandboxz's body.
type Report struct {
	// ConfigHash is the config the verdicts were made under.
	ConfigHash string `json:"config_hash"`
	// Sandboxes are by orchestrator name; one without a sandbox (its
	// tools run in the gateway) has none.
	Sandboxes map[string]Verdict `json:"sandboxes"`
}
