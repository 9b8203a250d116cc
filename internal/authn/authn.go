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
)

// The authentication modes of an orchestrator entry.
const (
	ModeToken          = "token"
	ModeServiceAccount = "serviceAccount"
	ModeOIDC           = "oidc"
)

// The refusal kinds. unauthorized is the gateway's older label for a
// missing bearer or an opaque token that no entry holds; the others say
// which check a verifiable token failed.
const (
	KindUnauthorized       = "unauthorized"
	KindInvalidToken       = "invalid_token"
	KindTokenExpired       = "token_expired"
	KindWrongAudience      = "wrong_audience"
	KindIdentityNotAllowed = "identity_not_allowed"
	KindAuthUnavailable    = "auth_unavailable"
)

// Messages are the refusal sentences, one per kind: what the caller reads
// in the 401 (or 503) body. They are fixed so that nothing of the token or
// of the issuer's error text reaches the caller.
var Messages = map[string]string{
	KindUnauthorized:       "invalid bearer token",
	KindInvalidToken:       "the token is not valid: bad signature, algorithm, issuer or format",
	KindTokenExpired:       "the token has expired or is not valid yet",
	KindWrongAudience:      "the token's audience is not this gateway",
	KindIdentityNotAllowed: "the token is valid but its identity is not an orchestrator of this gateway",
	KindAuthUnavailable:    "the identity provider could not be reached: retry",
}

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
	Kind   string
	Detail string
}

func (r *Refusal) Error() string {
	if r.Detail == "" {
		return r.Kind
	}
	return r.Kind + ": " + r.Detail
}

func refuse(kind, detail string) error { return &Refusal{Kind: kind, Detail: detail} }

// KindOf is the refusal kind of err: its Refusal's, else auth_unavailable
// (a verifier that failed without a verdict).
func KindOf(err error) string {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Kind
	}
	return KindAuthUnavailable
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
		return Identity{}, refuse(KindUnauthorized, "empty token")
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
		return Identity{}, refuse(KindInvalidToken, "no configured issuer or API server verifies this JWT")
	}
	return Identity{}, refuse(KindUnauthorized, "no entry holds this token")
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
