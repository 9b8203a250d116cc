// Package egressdouble holds the upstreams and the CA that tests of the
// gateway's egress proxy run against, all on loopback: an HTTPS API that
// requires a credential (and echoes what it was sent), git's own
// smart-HTTP server behind TLS and Basic auth, and a CA pair written as
// the gateway reads it.
package egressdouble

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// SelfSignedPEM is a fresh ECDSA P-256 self-signed certificate and its
// key, as PEM: a CA that may sign certificates, valid from an hour ago
// for a day, unless change shapes it otherwise.
func SelfSignedPEM(t testing.TB, change func(*x509.Certificate)) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "egress test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
	}
	change(tmpl)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

// CABetween is SelfSignedPEM of a CA that may sign certificates and
// nothing else, valid from from until until, then shaped by change: the
// fixed dates tests of expiry compare against.
func CABetween(t testing.TB, from, until time.Time, change func(*x509.Certificate)) (certPEM, keyPEM []byte) {
	t.Helper()
	return SelfSignedPEM(t, func(c *x509.Certificate) {
		c.NotBefore, c.NotAfter, c.KeyUsage = from, until, x509.KeyUsageCertSign
		change(c)
	})
}

// WriteCA writes a fresh certificate and key (SelfSignedPEM) as PEM files
// NAME.crt and NAME.key in dir: a CA that may sign certificates when
// isCA, else a plain leaf. It returns the two paths.
func WriteCA(t testing.TB, dir, name string, isCA bool) (certFile, keyFile string) {
	t.Helper()
	crt, key := SelfSignedPEM(t, func(c *x509.Certificate) {
		c.Subject = pkix.Name{CommonName: name}
		if !isCA {
			c.IsCA, c.KeyUsage = false, x509.KeyUsageDigitalSignature
		}
	})
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, crt, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// API is an HTTPS API on loopback that answers 401 unless the request
// carries Authorization: Bearer TOKEN. GET .../echo answers, as JSON, the
// headers it got ("headers") and the Authorization again in a header of
// its own (X-Echo-Authorization): what a careless upstream leaks. Any
// other path answers "ok PATH".
type API struct {
	*httptest.Server
	// Hits counts requests; Authorized those with the credential.
	Hits, Authorized atomic.Int64
}

// NewAPI starts an API requiring token on ip (a loopback address: a
// sandbox's NO_PROXY covers 127.0.0.1, so tests of the sandbox use
// 127.0.0.2); it closes with the test.
func NewAPI(t testing.TB, ip, token string) *API {
	t.Helper()
	a := &API{}
	a.Server = startTLS(t, ip, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.Hits.Add(1)
		got := r.Header.Get("Authorization")
		if subtle.ConstantTimeCompare([]byte(got), []byte("Bearer "+token)) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="double"`)
			http.Error(w, "credential required", http.StatusUnauthorized)
			return
		}
		a.Authorized.Add(1)
		if strings.HasSuffix(r.URL.Path, "/echo") {
			w.Header().Set("X-Echo-Authorization", got)
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(map[string]any{"headers": r.Header, "host": r.Host})
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok "+r.URL.Path) //nolint:gosec // G705: text/plain to a test client
	}))
	return a
}

// startTLS serves h over TLS on ip with a self-signed certificate for
// that address (Server.Certificate, which a client may trust alone).
func startTLS(t testing.TB, ip string, h http.Handler) *httptest.Server {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Skipf("cannot listen on %s: %v", ip, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: ip},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP(ip)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	_ = srv.Listener.Close()
	srv.Listener = ln
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}
