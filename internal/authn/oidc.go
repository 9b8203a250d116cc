package authn

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"

	"github.com/garraia/garra/internal/errkinds"
)

// OIDCEntry is one orchestrator that authenticates with a JWT from an
// OIDC issuer: the token must come from Issuer, name Audience in its aud,
// and match Subject (when set) and every one of Claims.
type OIDCEntry struct {
	Caller   string
	Issuer   string
	Audience string
	Subject  string
	// Claims must each be present with this value: a string claim equal
	// to it, or a list claim (groups, roles) that contains it.
	Claims map[string]string
}

// DefaultClockSkew is how far exp and nbf may be off the gateway's clock.
const DefaultClockSkew = 30 * time.Second

// rediscoverAfter is how long a failed discovery is remembered before the
// next token tries again, so that an issuer that is down is not asked
// once per request.
const rediscoverAfter = 5 * time.Second

// OIDC verifies JWTs of the configured issuers with go-oidc: the issuer's
// discovery document gives the JWKS, whose keys are cached and refetched
// when a token names a key the cache does not hold (a rotation).
type OIDC struct {
	// ctx carries the HTTP client for discovery and key fetches for the
	// whole life of the authenticator (go-oidc keeps it).
	ctx     context.Context
	now     func() time.Time
	skew    time.Duration
	issuers map[string]*issuer
}

type issuer struct {
	url     string
	entries []OIDCEntry

	mu       sync.Mutex
	verifier *oidc.IDTokenVerifier
	failedAt time.Time
	lastErr  error
}

// OIDCOptions are NewOIDC's knobs; zero values are the defaults.
type OIDCOptions struct {
	HTTPClient *http.Client     // nil = http.DefaultClient
	Now        func() time.Time // nil = time.Now
	ClockSkew  time.Duration    // 0 = DefaultClockSkew
}

// NewOIDC builds the verifiers of entries. Nothing is fetched until the
// first token of an issuer arrives, so a gateway starts while its issuer
// is unreachable and refuses those tokens as auth_unavailable meanwhile.
func NewOIDC(entries []OIDCEntry, o OIDCOptions) *OIDC {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.ClockSkew == 0 {
		o.ClockSkew = DefaultClockSkew
	}
	ctx := context.Background()
	if o.HTTPClient != nil {
		ctx = oidc.ClientContext(ctx, o.HTTPClient)
	}
	a := &OIDC{ctx: ctx, now: o.Now, skew: o.ClockSkew, issuers: map[string]*issuer{}}
	for _, e := range entries {
		is := a.issuers[e.Issuer]
		if is == nil {
			is = &issuer{url: e.Issuer}
			a.issuers[e.Issuer] = is
		}
		is.entries = append(is.entries, e)
	}
	return a
}

// Issuers are the configured issuer URLs, sorted.
func (a *OIDC) Issuers() []string {
	var out []string
	for u := range a.issuers {
		out = append(out, u)
	}
	slices.Sort(out)
	return out
}

// errUnavailable marks a verification that could not reach the issuer.
var errUnavailable = errors.New("issuer unreachable")

func (is *issuer) load(ctx context.Context, now time.Time) (*oidc.IDTokenVerifier, error) {
	is.mu.Lock()
	defer is.mu.Unlock()
	if is.verifier != nil {
		return is.verifier, nil
	}
	if !is.failedAt.IsZero() && now.Sub(is.failedAt) < rediscoverAfter {
		return nil, is.lastErr
	}
	p, err := oidc.NewProvider(ctx, is.url)
	if err != nil {
		is.failedAt, is.lastErr = now, fmt.Errorf("%w: discovery of %s: %w", errUnavailable, is.url, err)
		return nil, is.lastErr
	}
	var meta struct {
		JWKS string `json:"jwks_uri"`
	}
	if err := p.Claims(&meta); err != nil || meta.JWKS == "" {
		is.failedAt, is.lastErr = now, fmt.Errorf("%w: discovery of %s names no jwks_uri", errUnavailable, is.url)
		return nil, is.lastErr
	}
	keys := fetchAware{oidc.NewRemoteKeySet(ctx, meta.JWKS)}
	// Expiry and audience are checked here, with our skew and so that
	// each failure gets its own kind.
	is.verifier = oidc.NewVerifier(is.url, keys, &oidc.Config{
		SkipClientIDCheck:    true,
		SkipExpiryCheck:      true,
		SupportedSigningAlgs: verifyAlgs,
	})
	return is.verifier, nil
}

// fetchAware notes in the request's context that the key set could not be
// fetched, because go-oidc reports that as text only, and a JWKS outage
// must not read as a forged token.
type fetchAware struct{ inner *oidc.RemoteKeySet }

type fetchFailedKey struct{}

func (f fetchAware) VerifySignature(ctx context.Context, jwt string) ([]byte, error) {
	payload, err := f.inner.VerifySignature(ctx, jwt)
	if err != nil && strings.HasPrefix(err.Error(), "fetching keys") {
		if p, ok := ctx.Value(fetchFailedKey{}).(*bool); ok {
			*p = true
		}
	}
	return payload, err
}

// Authenticate implements Authenticator. A token whose issuer no entry
// names is not this authenticator's.
func (a *OIDC) Authenticate(ctx context.Context, token string) (Identity, error) {
	u, ok := peek(token)
	if !ok {
		return Identity{}, errSkip
	}
	is := a.issuers[u.Issuer]
	if is == nil {
		return Identity{}, errSkip
	}
	now := a.now()
	v, err := is.load(a.ctx, now)
	if err != nil {
		return Identity{}, err
	}
	var fetchFailed bool
	tok, err := v.Verify(context.WithValue(ctx, fetchFailedKey{}, &fetchFailed), token)
	if err != nil {
		if fetchFailed {
			return Identity{}, fmt.Errorf("%w: keys of %s: %w", errUnavailable, is.url, err)
		}
		return Identity{}, refuse(errkinds.InvalidToken, err.Error())
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return Identity{}, refuse(errkinds.InvalidToken, "claims: "+err.Error())
	}
	if err := checkTimes(tok.Expiry, claims["nbf"], now, a.skew); err != nil {
		return Identity{}, err
	}
	return is.match(tok.Issuer, tok.Subject, tok.Audience, claims)
}

// checkTimes: exp is required and must not be past, nbf (when present)
// not ahead, each within skew.
func checkTimes(exp time.Time, nbf any, now time.Time, skew time.Duration) error {
	if exp.IsZero() {
		return refuse(errkinds.InvalidToken, "no exp claim")
	}
	if now.After(exp.Add(skew)) {
		return refuse(errkinds.TokenExpired, "expired at "+exp.UTC().Format(time.RFC3339))
	}
	if n, ok := nbf.(float64); ok {
		if t := time.Unix(int64(n), 0); now.Add(skew).Before(t) {
			return refuse(errkinds.TokenExpired, "not valid before "+t.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// match maps a verified token to the one entry of its issuer it proves.
// The audience is checked first: a token for another service says so
// (wrong_audience) before its subject is looked at.
func (is *issuer) match(iss, sub string, aud []string, claims map[string]any) (Identity, error) {
	var forUs []OIDCEntry
	for _, e := range is.entries {
		if slices.Contains(aud, e.Audience) {
			forUs = append(forUs, e)
		}
	}
	if len(forUs) == 0 {
		return Identity{}, refuse(errkinds.WrongAudience, fmt.Sprintf("aud names none of this issuer's configured audiences (%d entries)", len(is.entries)))
	}
	for _, e := range forUs {
		if claimsMatch(e, sub, claims) {
			return Identity{Caller: e.Caller, Mode: ModeOIDC, Subject: iss + "#" + sub, Personal: true}, nil
		}
	}
	return Identity{}, refuse(errkinds.IdentityNotAllowed, "subject and claims match no entry of this issuer and audience")
}

func claimsMatch(e OIDCEntry, sub string, claims map[string]any) bool {
	if e.Subject != "" && e.Subject != sub {
		return false
	}
	for k, want := range e.Claims {
		switch v := claims[k].(type) {
		case string:
			if v != want {
				return false
			}
		case bool:
			if fmt.Sprint(v) != want {
				return false
			}
		case []any:
			if !slices.ContainsFunc(v, func(x any) bool { s, ok := x.(string); return ok && s == want }) {
				return false
			}
		default:
			return false
		}
	}
	return true
}
