package gateway

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"log/slog"

	"github.com/garraia/garra/internal/config"
)

// credential is one bearer token and who holds it. Tokens are kept as
// SHA-256 digests so that every comparison has the same length and runs in
// constant time.
type credential struct {
	digest [sha256.Size]byte
	caller Caller
}

// callersFrom builds the credentials: the owner's key, then one per
// token of each orchestrator whose token is available (the variable
// key_env names, or each line of the file key_file names). An orchestrator without one (variable unset or
// empty, file unreadable or empty, or both keys set) is disabled with one
// warning: an empty token must never authenticate anyone.
func callersFrom(cfg *config.Config, getenv func(string) string, log *slog.Logger) []credential {
	var creds []credential
	if cfg.Gateway.APIKey != "" {
		creds = append(creds, credential{sha256.Sum256([]byte(cfg.Gateway.APIKey)), Caller{Name: OwnerName, Owner: true}})
	}
	for _, o := range cfg.Gateway.MCPHTTP.Orchestrators {
		if config.OrchestratorNameReserved(o.Name) {
			// It would read as the owner in every log and audit line.
			log.Warn("orchestrator disabled: its name is reserved", "orchestrator", o.Name,
				"fix", "rename it; `garra config check` lists the reserved names")
			continue
		}
		tokens, err := o.Tokens(getenv)
		if err != nil {
			log.Warn("orchestrator disabled: no token", "orchestrator", o.Name, "error", err.Error(),
				"fix", "set the variable key_env names in the gateway's environment, or key_file to a readable file holding the token")
			continue
		}
		c := Caller{Name: o.Name, Chats: o.Chats, Sandbox: o.Sandbox}
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
		// Every line of a token file is valid: the overlap of a rotation.
		for _, token := range tokens {
			creds = append(creds, credential{sha256.Sum256([]byte(token)), c})
		}
	}
	return creds
}

// authenticate finds the caller holding token. It compares against every
// credential without stopping early, so timing does not reveal which one
// (or whether any) matched.
func authenticate(creds []credential, token string) (Caller, bool) {
	d := sha256.Sum256([]byte(token))
	var found Caller
	ok := false
	for _, c := range creds {
		if subtle.ConstantTimeCompare(d[:], c.digest[:]) == 1 {
			found, ok = c.caller, true
		}
	}
	return found, ok && token != ""
}

type callerKey struct{}

func withCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

func callerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}
