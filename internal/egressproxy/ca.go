package egressproxy

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"net"
	"sync"
	"time"
)

// Leaf certificates live a day and are made again an hour before they
// end; the cache holds at most maxLeaves hosts (it starts over when full:
// the hosts a set of orchestrators' credentials name are few).
const (
	leafLifetime = 24 * time.Hour
	leafRenew    = time.Hour
	maxLeaves    = 4096
)

// Signer makes the certificates the proxy presents for intercepted hosts,
// signed by the gateway's CA, and caches them per host. All leaves share
// one ECDSA P-256 key made at start: it never leaves the process, and a
// key per host would cost a key generation per new host for nothing.
type Signer struct {
	ca  tls.Certificate // Leaf parsed
	key *ecdsa.PrivateKey
	now func() time.Time

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// NewSigner returns a signer for ca (a CA certificate with its key, Leaf
// parsed, as config.GatewayEgress.LoadEgressCA returns it).
func NewSigner(ca tls.Certificate) (*Signer, error) {
	if ca.Leaf == nil {
		return nil, fmt.Errorf("egress CA: certificate not parsed")
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("egress leaf key: %w", err)
	}
	return &Signer{ca: ca, key: key, now: time.Now, leaves: map[string]*tls.Certificate{}}, nil
}

// reuseSigner keeps old when it signs with the same CA (its cache stays
// warm across reloads), else makes a new one; nil when that fails.
func reuseSigner(old *Signer, ca tls.Certificate) *Signer {
	if old != nil && bytes.Equal(old.ca.Certificate[0], ca.Certificate[0]) {
		return old
	}
	s, err := NewSigner(ca)
	if err != nil {
		return nil
	}
	return s
}

// Leaf is the certificate for host (a name or an IP address).
func (s *Signer) Leaf(host string) (*tls.Certificate, error) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.leaves[host]; ok && now.Add(leafRenew).Before(c.Leaf.NotAfter) {
		return c, nil
	}
	c, err := s.sign(host, now)
	if err != nil {
		return nil, err
	}
	if len(s.leaves) >= maxLeaves {
		clear(s.leaves)
	}
	s.leaves[host] = c
	return c, nil
}

func (s *Signer) sign(host string, now time.Time) (*tls.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("serial: %w", err)
	}
	notAfter := now.Add(leafLifetime)
	if ca := s.ca.Leaf.NotAfter; ca.Before(notAfter) {
		notAfter = ca
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    now.Add(-5 * time.Minute), // the sandbox's clock may lag
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, s.ca.Leaf, &s.key.PublicKey, s.ca.PrivateKey)
	if err != nil {
		return nil, fmt.Errorf("sign the certificate of %s: %w", host, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: s.key, Leaf: leaf}, nil
}
