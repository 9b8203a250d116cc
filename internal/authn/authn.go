// Package authn resolves a request's bearer token to the configured
// caller it proves, in one of three modes: a static token the gateway
// holds (the default), a Kubernetes ServiceAccount token checked with the
// TokenReview API, or a JWT from an OIDC issuer checked against that
// issuer's published keys. The gateway only asks "who is this?"; which
// tools that caller has stays the gateway's policy.
//
// A refusal names the check that failed as a stable kind and never
// carries the token or anything decoded from it that the caller chose.
package authn

import (
	"context"
	"errors"
	"strings"

	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/errkinds"
)

// The authentication modes of an orchestrator entry: the config's names.
const (
	ModeToken          = config.AuthToken
	ModeServiceAccount = config.AuthServiceAccount
	ModeOIDC           = config.AuthOIDC
)

// Identity is who a token proved to be.
type Identity struct {
	// Caller is the entry the token maps to: an orchestrator's name, or
	// the owner's name for the gateway key.
	Caller string
	// Mode is how it was proved (ModeToken, ModeServiceAccount, ModeOIDC).
	Mode string
	// Subject is the proved identity: system:serviceaccount:NS:NAME, or
	// ISSUER#SUB for OIDC; "" for a static token.
	Subject string
	// Personal marks a Subject that may name a person (an OIDC subject):
	// audit and logs carry only its pseudonym.
	Personal bool
}

// Refusal is a token that proved nothing. Detail is for the gateway's log
// (an issuer's or the API server's reason); it never holds the token.
type Refusal struct {
	Kind   errkinds.Kind
	Detail string
}

func (r *Refusal) Error() string {
	if r.Detail == "" {
		return string(r.Kind)
	}
	return string(r.Kind) + ": " + r.Detail
}

func refuse(kind errkinds.Kind, detail string) error { return &Refusal{Kind: kind, Detail: detail} }

// KindOf is the refusal kind of err: its Refusal's, else auth_unavailable
// (a verifier that failed without a verdict).
func KindOf(err error) errkinds.Kind {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Kind
	}
	return errkinds.AuthUnavailable
}

// Authenticator resolves a bearer token. A nil error means the token
// proved Identity; otherwise the error is a *Refusal, or any other error
// when the verdict could not be reached (an unreachable API server).
type Authenticator interface {
	Authenticate(ctx context.Context, token string) (Identity, error)
}

// Chain tries its authenticators in order: static tokens, then OIDC for a
// JWT whose issuer is configured, then TokenReview for the rest. Each one
// answers errSkip for a token that is not its kind, so the first real
// verdict wins and one that fails is never retried by a weaker check.
type Chain []Authenticator

// errSkip is an authenticator's "not mine": the next one is asked.
var errSkip = errors.New("not this authenticator's token")

// Authenticate implements Authenticator.
func (c Chain) Authenticate(ctx context.Context, token string) (Identity, error) {
	token = strings.TrimSpace(token)
	if token == "" {
		return Identity{}, refuse(errkinds.Unauthorized, "empty token")
	}
	for _, a := range c {
		if a == nil {
			continue
		}
		id, err := a.Authenticate(ctx, token)
		if errors.Is(err, errSkip) {
			continue
		}
		return id, err
	}
	if looksLikeJWT(token) {
		return Identity{}, refuse(errkinds.InvalidToken, "no configured issuer or API server verifies this JWT")
	}
	return Identity{}, refuse(errkinds.Unauthorized, "no entry holds this token")
}

// looksLikeJWT: three base64url segments, the compact JWS form.
func looksLikeJWT(token string) bool {
	parts := strings.Split(token, ".")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" {
		return false
	}
	return !strings.ContainsFunc(token, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
	})
}
