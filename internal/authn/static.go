package authn

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
)

// Static holds the bearer tokens the gateway knows by value: the owner's
// key and the token mode's orchestrator tokens. Tokens are kept as
// SHA-256 digests so every comparison has the same length and runs in
// constant time.
type Static struct {
	creds []staticCred
}

type staticCred struct {
	digest [sha256.Size]byte
	caller string
}

// Add makes token prove caller. An empty token is ignored: it must never
// authenticate anyone.
func (s *Static) Add(caller, token string) {
	if token == "" {
		return
	}
	s.creds = append(s.creds, staticCred{sha256.Sum256([]byte(token)), caller})
}

// Authenticate implements Authenticator. It compares against every token
// without stopping early, so timing does not reveal which one (or whether
// any) matched; no match is not its verdict, the next authenticator's is.
func (s *Static) Authenticate(_ context.Context, token string) (Identity, error) {
	d := sha256.Sum256([]byte(token))
	found := ""
	for _, c := range s.creds {
		if subtle.ConstantTimeCompare(d[:], c.digest[:]) == 1 {
			found = c.caller
		}
	}
	if found == "" || token == "" {
		return Identity{}, errSkip
	}
	return Identity{Caller: found, Mode: ModeToken}, nil
}
