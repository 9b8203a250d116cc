package config

import (
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/garraia/garra/test/fakes/egressdouble"
)

// caPEM is a CA valid 2026 to 2036, shaped by change.
func caPEM(t *testing.T, change func(*x509.Certificate)) (certPEM, keyPEM []byte) {
	t.Helper()
	return egressdouble.CABetween(t, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2036, 1, 1, 0, 0, 0, 0, time.UTC), change)
}

func TestParseEgressCA(t *testing.T) {
	now := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	okCrt, okKey := caPEM(t, func(*x509.Certificate) {})
	otherCrt, _ := caPEM(t, func(*x509.Certificate) {})
	leaf, leafKey := caPEM(t, func(c *x509.Certificate) { c.IsCA = false; c.KeyUsage = x509.KeyUsageDigitalSignature })
	noSign, noSignKey := caPEM(t, func(c *x509.Certificate) { c.KeyUsage = x509.KeyUsageDigitalSignature })
	expired, expiredKey := caPEM(t, func(c *x509.Certificate) { c.NotAfter = now.Add(-time.Minute) })
	future, futureKey := caPEM(t, func(c *x509.Certificate) { c.NotBefore = now.Add(time.Hour) })
	tests := []struct {
		name     string
		crt, key []byte
		keyFault bool
		want     string
	}{
		{"a CA and its key", okCrt, okKey, false, ""},
		{"nothing", nil, nil, true, "not the key of the CA certificate, or not PEM"},
		{"another CA's key", otherCrt, okKey, true, "not the key of the CA certificate"},
		{"a leaf", leaf, leafKey, false, "not a CA certificate"},
		{"a CA that may not sign", noSign, noSignKey, false, "may not sign certificates"},
		{"expired", expired, expiredKey, false, "the CA expired at 2026-12-05T23:59:00Z"},
		{"not valid yet", future, futureKey, false, "the CA is not valid before 2026-12-06T01:00:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pair, err := ParseEgressCA(tc.crt, tc.key, now)
			if tc.want == "" {
				if err != nil || pair.Leaf == nil || !pair.Leaf.IsCA {
					t.Fatalf("ParseEgressCA = leaf %v, %v; want the CA", pair.Leaf, err)
				}
				return
			}
			var bad *EgressCAError
			if !errors.As(err, &bad) || !strings.Contains(bad.Reason, tc.want) || bad.Key != tc.keyFault {
				t.Fatalf("ParseEgressCA error = %#v, want %q (key at fault: %v)", err, tc.want, tc.keyFault)
			}
		})
	}
}

// The gateway and `garra config check` refuse a CA that no longer signs
// anything a client accepts, naming the file.
func TestLoadEgressCARefusesAnExpiredCA(t *testing.T) {
	dir := t.TempDir()
	crt, key := caPEM(t, func(c *x509.Certificate) { c.NotAfter = time.Now().Add(-time.Hour) })
	e := GatewayEgress{Listen: ":3128", CACertFile: filepath.Join(dir, "ca.crt"), CAKeyFile: filepath.Join(dir, "ca.key")}
	if err := os.WriteFile(e.CACertFile, crt, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.CAKeyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := e.LoadEgressCA(time.Now())
	if err == nil || !strings.HasPrefix(err.Error(), "gateway.egress.ca_cert_file: the CA expired at ") {
		t.Fatalf("LoadEgressCA = %v, want the expiry on gateway.egress.ca_cert_file", err)
	}
	c := &Config{Gateway: Gateway{Egress: e}}
	probs := c.checkEgressCA()
	if len(probs) != 1 || probs[0].Field != "gateway.egress.ca_cert_file" || !strings.Contains(probs[0].Message, "expired") {
		t.Fatalf("config check problems = %+v, want the expiry on gateway.egress.ca_cert_file", probs)
	}
}
