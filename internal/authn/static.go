package authn

import (
	"context"
	"crypto/sha256"
)

// Static holds the bearer tokens the gateway knows by value: the owner's
// key and the token mode's orchestrator tokens, by SHA-256 digest. A call
// is one digest and one map lookup, however many callers there are. The
// lookup's timing depends on the digest alone, and learning about a
// digest tells nothing of the token that would produce it, so the map
// leaks no more than the constant-time comparison of every digest it
// replaces (which cost a thousand comparisons a call at a thousand
// orchestrators).
type Static struct {
	byDigest map[[sha256.Size]byte]string
}

// ambiguous marks a digest that two callers claim: it proves neither.
const ambiguous = "\x00"

// Add makes token prove caller. An empty token is ignored: it must never
// authenticate anyone. A token added for two different callers
// authenticates neither (the gateway refuses such a config before; this
// holds without it).
func (s *Static) Add(caller, token string) {
	if token == "" {
		return
	}
	if s.byDigest == nil {
		s.byDigest = map[[sha256.Size]byte]string{}
	}
	d := sha256.Sum256([]byte(token))
	if prev, ok := s.byDigest[d]; ok && prev != caller {
		caller = ambiguous
	}
	s.byDigest[d] = caller
}

// Authenticate implements Authenticator. No match is not its verdict, the
// next authenticator's is.
func (s *Static) Authenticate(_ context.Context, token string) (Identity, error) {
	if token == "" {
		return Identity{}, errSkip
	}
	found, ok := s.byDigest[sha256.Sum256([]byte(token))]
	if !ok || found == ambiguous {
		return Identity{}, errSkip
	}
	return Identity{Caller: found, Mode: ModeToken}, nil
}
