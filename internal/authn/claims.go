package authn

import (
	"encoding/json"
	"slices"

	jose "github.com/go-jose/go-jose/v4"
)

// peekAlgs are the algorithms a token may name to be read at all. Reading
// is not trusting: the verifiers allow only asymmetric ones.
var peekAlgs = []jose.SignatureAlgorithm{
	jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA,
	jose.HS256, jose.HS384, jose.HS512,
}

// verifyAlgs are the signature algorithms an OIDC token may use. No HMAC:
// a public key used as an HMAC secret must never verify anything.
var verifyAlgs = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// unverified are the claims read before any check, to route a token to
// its verifier and to label a refusal the verifier already decided. They
// never admit anyone.
type unverified struct {
	Issuer   string   `json:"iss"`
	Audience audience `json:"aud"`
	Expiry   *float64 `json:"exp"`
}

// audience is the aud claim, a string or a list of strings.
type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*a = audience{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*a = many
	return nil
}

func (a audience) has(s string) bool { return s != "" && slices.Contains(a, s) }

// peek reads a JWS's claims without verifying it; ok is false for
// anything that is not a signed JWT with a JSON payload (alg none among
// them).
func peek(token string) (unverified, bool) {
	jws, err := jose.ParseSignedCompact(token, peekAlgs)
	if err != nil || len(jws.Signatures) != 1 {
		return unverified{}, false
	}
	var u unverified
	if err := json.Unmarshal(jws.UnsafePayloadWithoutVerification(), &u); err != nil {
		return unverified{}, false
	}
	return u, true
}
