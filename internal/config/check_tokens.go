package config

import (
	"crypto/sha256"
	"fmt"
)

// TokenCollision is an orchestrator whose bearer token proves someone else
// too: the owner (Owner set) or an earlier orchestrator (Other).
type TokenCollision struct {
	Index int    // in gateway.mcp_http.orchestrators
	Field string // its key_env or key_file
	Owner bool
	Other string
}

func (tc TokenCollision) String() string {
	if tc.Owner {
		return "holds the owner's key (gateway.api_key, api_key_file or " + EnvGatewayAPIKey + "): " +
			"the owner would be taken for this orchestrator and lose what only the owner may do (/sandboxz, the chat API); give it a token of its own"
	}
	return fmt.Sprintf("holds the same token as orchestrator %q: a token must prove one caller; give each its own", tc.Other)
}

// TokenCollisions lists the static-token orchestrators that share a token
// with the owner's key or with an earlier orchestrator. ownerKey is the
// key in force ("" for none); tokens are read as the gateway reads them,
// and an entry whose token cannot be read is left to the other checks.
// Only digests are compared and kept.
func (c *Config) TokenCollisions(ownerKey string, getenv func(string) string) []TokenCollision {
	return c.TokenCollisionsWith(ownerKey, getenv, nil)
}

// TokenCollisionsWith is TokenCollisions with the token files read by read
// (nil: the disk).
func (c *Config) TokenCollisionsWith(ownerKey string, getenv func(string) string, read SecretReader) []TokenCollision {
	var out []TokenCollision
	owner := sha256.Sum256([]byte(ownerKey))
	seen := map[[sha256.Size]byte]string{}
	for i, o := range c.Gateway.MCPHTTP.Orchestrators {
		if o.AuthMode() != AuthToken || OrchestratorNameReserved(o.Name) {
			continue // no token, or an entry the gateway never loads
		}
		tokens, err := o.TokensWith(getenv, read)
		if err != nil {
			continue
		}
		field := "key_env"
		if o.KeyFile != "" {
			field = "key_file"
		}
		var hit *TokenCollision
		for _, t := range tokens {
			d := sha256.Sum256([]byte(t))
			switch prev, ok := seen[d]; {
			case ownerKey != "" && d == owner:
				hit = &TokenCollision{Index: i, Field: field, Owner: true}
			case ok && prev != o.Name && hit == nil:
				hit = &TokenCollision{Index: i, Field: field, Other: prev}
			case !ok:
				seen[d] = o.Name
			}
		}
		if hit != nil {
			out = append(out, *hit)
		}
	}
	return out
}

// checkTokens reports TokenCollisions as errors: the gateway refuses such
// a config, since it could not tell the callers apart.
func (c *Config) checkTokens(getenv func(string) string, read SecretReader) []Problem {
	owner := getenv(EnvGatewayAPIKey)
	if owner == "" {
		owner = c.Gateway.APIKey
	}
	if owner == "" && c.Gateway.APIKeyFile != "" {
		owner, _ = read.orDisk()(c.Gateway.APIKeyFile)
	}
	var ps []Problem
	for _, tc := range c.TokenCollisionsWith(owner, getenv, read) {
		o := c.Gateway.MCPHTTP.Orchestrators[tc.Index]
		field := fmt.Sprintf("gateway.mcp_http.orchestrators[%d]", tc.Index)
		if o.Name != "" {
			field = "gateway.mcp_http.orchestrators[" + o.Name + "]"
		}
		ps = append(ps, Problem{Field: field + "." + tc.Field, Message: tc.String()})
	}
	return ps
}
