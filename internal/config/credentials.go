package config

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
)

// Credentials the agent uses but never holds: the gateway's egress proxy
// adds them to a sandbox's outbound HTTP requests for the hosts they name.
// The sandbox reaches the proxy with a token derived from its own sandbox
// token, so one orchestrator's sandbox never gets another's credential.

// GatewayEgress configures the egress proxy that sandboxes with
// `egress: gateway` use as their only way out.
type GatewayEgress struct {
	// Listen is the proxy's address (host:port); empty turns it off.
	Listen string `json:"listen,omitempty"`
	// CACertFile and CAKeyFile are the PEM certificate and key of the
	// gateway's own CA, which signs the certificates the proxy presents
	// for hosts it injects a credential into. The sandbox trusts this CA
	// beside its image's own bundle.
	CACertFile string `json:"ca_cert_file,omitempty"`
	CAKeyFile  string `json:"ca_key_file,omitempty"`
}

// OrchestratorEgress is what an orchestrator's sandbox may reach through
// the gateway's egress proxy.
type OrchestratorEgress struct {
	// Hosts are exact host names or a leading "*." wildcard (any name
	// below that domain). The hosts of the orchestrator's credentials are
	// allowed too.
	Hosts []string `json:"hosts,omitempty"`
}

// Credential is one secret the gateway injects into an orchestrator's
// outbound requests. The value is read from File, like every other secret.
type Credential struct {
	// Name identifies it in audit lines, metrics and refusals (a
	// lower-case DNS label, unique within the orchestrator).
	Name string `json:"name"`
	// File holds the value (surrounding white space trimmed).
	File string `json:"file"`
	// Hosts it is sent to: exact names or a leading "*." wildcard.
	Hosts []string `json:"hosts"`
	// Methods limits it to these HTTP methods (upper case); empty = any.
	Methods []string `json:"methods,omitempty"`
	// PathPrefixes limits it to request paths that start with one of
	// these (each starting with "/"); empty = any.
	PathPrefixes []string `json:"path_prefixes,omitempty"`
	// Inject says how the value is put into the request.
	Inject CredentialInject `json:"inject,omitzero"`
}

// Credential injection schemes.
const (
	// SchemeBearer sends "Bearer VALUE" (the default).
	SchemeBearer = "bearer"
	// SchemeBasic sends "Basic base64(USERNAME:VALUE)", what git over
	// HTTPS and most package registries expect.
	SchemeBasic = "basic"
	// SchemeNone sends VALUE as is, for API-key headers.
	SchemeNone = "none"
)

// CredentialInject is where and how a credential's value is sent. Any
// value the request already carries in that header is replaced.
type CredentialInject struct {
	// Header is the request header; empty means Authorization.
	Header string `json:"header,omitempty"`
	// Scheme is bearer (default), basic or none.
	Scheme string `json:"scheme,omitempty"`
	// Username is the user name of the basic scheme (e.g.
	// x-access-token for a GitHub token).
	Username string `json:"username,omitempty"`
}

// EgressProxyUser is the user name of the Proxy-Authorization a sandbox
// sends to the gateway's egress proxy; the password is its EgressToken.
const EgressProxyUser = "garra"

// egressTokenMessage is what EgressToken signs; the version lets a future
// derivation coexist with this one.
const egressTokenMessage = "garra egress v1" //nolint:gosec // G101: a public domain-separation label, not a credential

// EgressToken is the token a sandbox authenticates with at the gateway's
// egress proxy: hex(HMAC-SHA256(key = its sandbox token, "garra egress
// v1")). Both sides derive it from the sandbox token they already share,
// so no new secret is distributed; bash in the sandbox holds this token,
// never the sandbox token itself, and the HMAC cannot be turned back into
// it. It only names the orchestrator to the proxy, which then applies
// that orchestrator's rules.
func EgressToken(sandboxToken string) string {
	m := hmac.New(sha256.New, []byte(sandboxToken))
	_, _ = m.Write([]byte(egressTokenMessage))
	return hex.EncodeToString(m.Sum(nil))
}

// Tokens are every line of token_file (each valid at the sandbox during a
// rotation's overlap), or the value of token_env.
func (s OrchestratorSandbox) Tokens(getenv func(string) string) ([]string, error) {
	return s.TokensWith(getenv, nil)
}

// TokensWith is Tokens with token_file read by read (nil: the disk).
func (s OrchestratorSandbox) TokensWith(getenv func(string) string, read SecretReader) ([]string, error) {
	if s.TokenFile != "" && s.TokenEnv == "" {
		lines, err := read.Lines(s.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("token_file: %w", err)
		}
		return lines, nil
	}
	t, err := s.TokenWith(getenv, read)
	if err != nil {
		return nil, err
	}
	return []string{t}, nil
}

// Value reads the credential's value from its file (ReadSecretFile: a
// regular file, trimmed, not empty). It is read on every policy build, so
// a rotated or emptied file takes effect on the next reload.
func (c Credential) Value() (string, error) {
	return c.ValueWith(nil)
}

// ValueWith is Value with the file read by read (nil: the disk).
func (c Credential) ValueWith(read SecretReader) (string, error) {
	v, err := read.orDisk()(c.File)
	if err != nil {
		return "", fmt.Errorf("file: %w", err)
	}
	return v, nil
}
