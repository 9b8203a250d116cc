package authn_test

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/garraia/garra/internal/authn"
	"github.com/garraia/garra/internal/authn/authntest"
	"github.com/garraia/garra/internal/errkinds"
)

const (
	audA = "https://garra.example/mcp"
	audB = "garra-b"
)

func oidcChain(t *testing.T, is *authntest.Issuer) authn.Chain {
	t.Helper()
	st := &authn.Static{}
	st.Add("owner", "owner-key-0123456789")
	o := authn.NewOIDC([]authn.OIDCEntry{
		{Caller: "alpha", Issuer: is.URL, Audience: audA, Subject: "alpha-bot"},
		{Caller: "beta", Issuer: is.URL, Audience: audB, Subject: "beta-bot"},
		{Caller: "gamma", Issuer: is.URL, Audience: audA, Claims: map[string]string{"groups": "garra", "env": "prod"}},
	}, authn.OIDCOptions{})
	return authn.Chain{st, o}
}

func kind(err error) errkinds.Kind {
	if err == nil {
		return ""
	}
	return authn.KindOf(err)
}

func TestOIDCEveryValidationPath(t *testing.T) {
	is := authntest.NewIssuer(t)
	chain := oidcChain(t, is)
	now := time.Now()
	other := authntest.NewIssuer(t) // a real issuer nobody configured
	base := func(extra map[string]any) map[string]any {
		c := map[string]any{"iss": is.URL, "sub": "alpha-bot", "aud": audA, "exp": now.Add(time.Minute).Unix()}
		for k, v := range extra {
			c[k] = v
		}
		return c
	}
	cases := []struct {
		name   string
		token  string
		caller string
		kind   errkinds.Kind
	}{
		{"right token", is.Sign(nil, base(nil)), "alpha", ""},
		{"aud as a list", is.Sign(nil, base(map[string]any{"aud": []string{"x", audA}})), "alpha", ""},
		{"the other orchestrator's own token", is.Sign(nil, base(map[string]any{"sub": "beta-bot", "aud": audB})), "beta", ""},
		{"claims entry", is.Sign(nil, base(map[string]any{"sub": "svc-9", "groups": []string{"ops", "garra"}, "env": "prod"})), "gamma", ""},
		{"expired a second ago, within skew", is.Sign(nil, base(map[string]any{"exp": now.Add(-time.Second).Unix()})), "alpha", ""},
		{"owner key", "owner-key-0123456789", "owner", ""},
		{"expired", is.Sign(nil, base(map[string]any{"exp": now.Add(-10 * time.Minute).Unix()})), "", errkinds.TokenExpired},
		{"not valid yet", is.Sign(nil, base(map[string]any{"nbf": now.Add(10 * time.Minute).Unix()})), "", errkinds.TokenExpired},
		{"no exp", is.Sign(nil, base(map[string]any{"exp": nil})), "", errkinds.InvalidToken},
		{"wrong audience", is.Sign(nil, base(map[string]any{"aud": "https://elsewhere.example"})), "", errkinds.WrongAudience},
		{"no audience", is.Sign(nil, base(map[string]any{"aud": nil})), "", errkinds.WrongAudience},
		{"wrong iss, signed by the configured key", is.Sign(nil, base(map[string]any{"iss": "https://evil.example"})), "", errkinds.InvalidToken},
		{"another issuer's valid token", other.Sign(nil, base(map[string]any{"iss": other.URL})), "", errkinds.InvalidToken},
		{"configured iss, unpublished key", is.Sign(other.Key(), base(nil)), "", errkinds.InvalidToken},
		{"alg none", authntest.Unsigned(base(nil)), "", errkinds.InvalidToken},
		{"HS256 with the public key (PEM)", authntest.HS256(is.PublicKeyPEM(), base(nil)), "", errkinds.InvalidToken},
		{"HS256 with the public key (DER)", authntest.HS256(is.PublicKeyDER(), base(nil)), "", errkinds.InvalidToken},
		{"another orchestrator's subject", is.Sign(nil, base(map[string]any{"sub": "beta-bot"})), "", errkinds.IdentityNotAllowed},
		{"unknown subject", is.Sign(nil, base(map[string]any{"sub": "mallory"})), "", errkinds.IdentityNotAllowed},
		{"claims entry, one claim missing", is.Sign(nil, base(map[string]any{"sub": "svc-9", "groups": []string{"garra"}})), "", errkinds.IdentityNotAllowed},
		{"claims entry, wrong type", is.Sign(nil, base(map[string]any{"sub": "svc-9", "groups": 7, "env": "prod"})), "", errkinds.IdentityNotAllowed},
		{"tampered payload", tamper(is.Sign(nil, base(nil))), "", errkinds.InvalidToken},
		{"JWT-shaped garbage", "eyJhbGciOi.eyJzdWIi.c2ln", "", errkinds.InvalidToken},
		{"opaque wrong token", "not-a-token-at-all", "", errkinds.Unauthorized},
		{"empty", "   ", "", errkinds.Unauthorized},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id, err := chain.Authenticate(context.Background(), c.token)
			if got := kind(err); got != c.kind || id.Caller != c.caller {
				t.Fatalf("got caller %q kind %q (%v), want %q %q", id.Caller, got, err, c.caller, c.kind)
			}
			if err != nil && strings.Contains(err.Error(), c.token) {
				t.Fatalf("the refusal echoes the token: %v", err)
			}
			if c.caller != "" && c.caller != "owner" && (id.Mode != authn.ModeOIDC || !id.Personal || !strings.HasPrefix(id.Subject, is.URL+"#")) {
				t.Fatalf("identity %+v", id)
			}
		})
	}
	t.Logf("%d cases", len(cases))
}

// tamper changes the payload's subject and keeps the signature.
func tamper(tok string) string {
	parts := strings.Split(tok, ".")
	b, _ := base64.RawURLEncoding.DecodeString(parts[1])
	b = []byte(strings.Replace(string(b), "alpha-bot", "alpha-bou", 1))
	parts[1] = base64.RawURLEncoding.EncodeToString(b)
	return strings.Join(parts, ".")
}

// A rotated key is fetched when its first token arrives; a dropped key's
// tokens stop verifying.
func TestOIDCKeyRotation(t *testing.T) {
	is := authntest.NewIssuer(t)
	chain := oidcChain(t, is)
	claims := map[string]any{"sub": "alpha-bot", "aud": audA}
	ctx := context.Background()
	old := is.Sign(nil, claims)
	if id, err := chain.Authenticate(ctx, old); err != nil || id.Caller != "alpha" {
		t.Fatalf("before rotation: %+v %v", id, err)
	}
	fetches := is.JWKSFetches.Load()
	if _, err := chain.Authenticate(ctx, old); err != nil || is.JWKSFetches.Load() != fetches {
		t.Fatalf("a known key was refetched (%d → %d) or refused: %v", fetches, is.JWKSFetches.Load(), err)
	}
	is.Rotate(t, true)
	fresh := is.Sign(nil, claims)
	if id, err := chain.Authenticate(ctx, fresh); err != nil || id.Caller != "alpha" {
		t.Fatalf("after rotation: %+v %v", id, err)
	}
	if is.JWKSFetches.Load() != fetches+1 {
		t.Fatalf("JWKS fetched %d times after rotation, want %d", is.JWKSFetches.Load(), fetches+1)
	}
	// go-oidc answers a fetch's waiters before it swaps its cache, so a
	// check right after the rotation may still find the dropped key; the
	// refusal must come within moments, not at once.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := chain.Authenticate(ctx, old)
		if kind(err) == errkinds.InvalidToken {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a dropped key's token, 5 s after the rotation: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An issuer that cannot be reached is no verdict: auth_unavailable, and
// the gateway keeps its static tokens working.
func TestOIDCIssuerUnreachable(t *testing.T) {
	is := authntest.NewIssuer(t)
	srv := httptest.NewServer(nil)
	deadURL := srv.URL
	srv.Close()
	st := &authn.Static{}
	st.Add("owner", "owner-key-0123456789")
	chain := authn.Chain{st, authn.NewOIDC([]authn.OIDCEntry{{Caller: "alpha", Issuer: deadURL, Audience: audA, Subject: "alpha-bot"}}, authn.OIDCOptions{})}
	_, err := chain.Authenticate(context.Background(), is.Sign(nil, map[string]any{"iss": deadURL, "sub": "alpha-bot", "aud": audA}))
	var r *authn.Refusal
	if err == nil || errors.As(err, &r) || authn.KindOf(err) != errkinds.AuthUnavailable {
		t.Fatalf("got %v, want an auth_unavailable error that is no refusal", err)
	}
	if id, err := chain.Authenticate(context.Background(), "owner-key-0123456789"); err != nil || id.Caller != "owner" {
		t.Fatalf("owner: %+v %v", id, err)
	}
}
