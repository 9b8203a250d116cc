package authntest

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"
)

// Unsigned is a token with alg none, which go-jose refuses to produce:
// the three segments are written out here.
func Unsigned(claims map[string]any) string {
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	return enc(map[string]string{"alg": "none", "typ": "JWT"}) + "." + enc(claims) + "."
}

// HS256 signs claims with HMAC-SHA256 under secret.
func HS256(secret []byte, claims map[string]any) string {
	s, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.HS256, Key: secret}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		panic(err)
	}
	tok, err := jwt.Signed(s).Claims(claims).Serialize()
	if err != nil {
		panic(err)
	}
	return tok
}

// PublicKeyPEM and PublicKeyDER are the issuer's current public key, the
// secrets of the algorithm-confusion attack (HS256 "signed" with what the
// JWKS publishes).
func (is *Issuer) PublicKeyPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: is.PublicKeyDER()})
}

// PublicKeyDER is PublicKeyPEM without the PEM armour.
func (is *Issuer) PublicKeyDER() []byte {
	der, err := x509.MarshalPKIXPublicKey(&is.Key().PublicKey)
	if err != nil {
		panic(err)
	}
	return der
}
