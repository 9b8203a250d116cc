// Package authntest is an OIDC issuer double for tests: a real HTTP
// server on 127.0.0.1 that serves a discovery document, a JWKS whose
// signing key can be rotated, and a client-credentials token endpoint, so
// that verifiers and MCP clients run their real code against it.
package authntest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Client is one client the token endpoint issues tokens to: sub is its
// id, aud its Audience, plus Claims.
type Client struct {
	Secret   string
	Audience string
	Claims   map[string]any
}

// Issuer is the double. URL is its issuer identifier.
type Issuer struct {
	URL string

	mu      sync.Mutex
	keys    []*rsa.PrivateKey // keys[len-1] signs; the JWKS publishes all of them
	kids    []string
	clients map[string]Client

	// JWKSFetches counts GET /jwks.
	JWKSFetches atomic.Int64
	// Tokens counts tokens issued by the token endpoint.
	Tokens atomic.Int64
}

// NewIssuer starts the double; it stops with the test.
func NewIssuer(t testing.TB) *Issuer {
	t.Helper()
	is := &Issuer{clients: map[string]Client{}}
	is.Rotate(t, false)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, map[string]any{
			"issuer":                                is.URL,
			"jwks_uri":                              is.URL + "/jwks",
			"token_endpoint":                        is.URL + "/token",
			"authorization_endpoint":                is.URL + "/authorize",
			"response_types_supported":              []string{"code"},
			"grant_types_supported":                 []string{"client_credentials"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_basic", "client_secret_post"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
			"subject_types_supported":               []string{"public"},
			// MCP clients refuse an authorization server without PKCE.
			"code_challenge_methods_supported": []string{"S256"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		is.JWKSFetches.Add(1)
		is.mu.Lock()
		var set jose.JSONWebKeySet
		for i, k := range is.keys {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: &k.PublicKey, KeyID: is.kids[i], Algorithm: "RS256", Use: "sig"})
		}
		is.mu.Unlock()
		writeJSON(w, set)
	})
	mux.HandleFunc("POST /token", is.token)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	is.URL = srv.URL
	return is
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// Register adds a client of the token endpoint.
func (is *Issuer) Register(id string, c Client) {
	is.mu.Lock()
	defer is.mu.Unlock()
	is.clients[id] = c
}

// token is the client-credentials grant (RFC 6749 §4.4), secrets by
// basic auth or in the form.
func (is *Issuer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil || r.PostForm.Get("grant_type") != "client_credentials" {
		w.WriteHeader(http.StatusBadRequest)
		writeJSON(w, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	is.mu.Lock()
	c, known := is.clients[id]
	is.mu.Unlock()
	if !known || c.Secret != secret {
		w.WriteHeader(http.StatusUnauthorized)
		writeJSON(w, map[string]string{"error": "invalid_client"})
		return
	}
	claims := map[string]any{"sub": id, "aud": c.Audience}
	maps.Copy(claims, c.Claims)
	is.Tokens.Add(1)
	writeJSON(w, map[string]any{"access_token": is.Sign(nil, claims), "token_type": "Bearer", "expires_in": 300})
}

// Rotate makes a new key the signing key. With drop, the previous keys
// leave the JWKS (their tokens stop verifying); without, they stay
// published for the overlap.
func (is *Issuer) Rotate(t testing.TB, drop bool) {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is.mu.Lock()
	defer is.mu.Unlock()
	if drop {
		is.keys, is.kids = nil, nil
	}
	is.keys = append(is.keys, k)
	is.kids = append(is.kids, fmt.Sprintf("k%d", time.Now().UnixNano()))
}

// Key is the current signing key (for tests that forge with it).
func (is *Issuer) Key() *rsa.PrivateKey {
	is.mu.Lock()
	defer is.mu.Unlock()
	return is.keys[len(is.keys)-1]
}

// Sign returns a compact RS256 JWT of claims, signed with the current key
// (or key when not nil, under an unpublished kid). iss defaults to the
// issuer, iat/exp to now and now+5m, unless claims set them.
func (is *Issuer) Sign(key *rsa.PrivateKey, claims map[string]any) string {
	is.mu.Lock()
	kid := is.kids[len(is.kids)-1]
	if key == nil {
		key = is.keys[len(is.keys)-1]
	} else {
		kid = "unpublished"
	}
	is.mu.Unlock()
	now := time.Now()
	all := map[string]any{"iss": is.URL, "iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix()}
	maps.Copy(all, claims)
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader(jose.HeaderKey("kid"), kid))
	if err != nil {
		panic(err)
	}
	tok, err := jwt.Signed(signer).Claims(all).Serialize()
	if err != nil {
		panic(err)
	}
	return tok
}
