package controllers

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// trustChildEnv makes the test binary the child of
// TestTrustedCADirJoinsSystemPool: the leaf certificate to verify.
const trustChildEnv = "GARRA_TEST_TRUST_LEAF"

// The gateway trusts spec.gateway.egress.trustedCASecretRef through
// SSL_CERT_DIR alone, with no flag of its own: Go's crypto/x509 on Linux
// adds every certificate of those directories to the system pool, whose
// bundle still loads. This checks that claim in a child process (the pool
// is loaded once per process) with the layout the kubelet gives a Secret
// volume: the file a symlink into ..data, itself a symlink to a directory
// named by time.
func TestTrustedCADirJoinsSystemPool(t *testing.T) {
	if leafFile := os.Getenv(trustChildEnv); leafFile != "" {
		verifyLeafChild(t, leafFile)
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("SSL_CERT_DIR is how Go loads system roots on Linux")
	}
	caPEM, leafPEM := caAndLeaf(t, "git.corp.example")
	dir := t.TempDir()
	vol := filepath.Join(dir, "egress-trust")
	stamp := filepath.Join(vol, "..2026_12_06_07_00_00.123")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(stamp, 0o755))
	must(os.WriteFile(filepath.Join(stamp, KeyTrustedCA), caPEM, 0o444))
	must(os.Symlink(filepath.Base(stamp), filepath.Join(vol, "..data")))
	must(os.Symlink("..data/"+KeyTrustedCA, filepath.Join(vol, KeyTrustedCA)))
	leafFile := filepath.Join(dir, "leaf.pem")
	must(os.WriteFile(leafFile, leafPEM, 0o600))

	run := func(certDirs []string) string {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestTrustedCADirJoinsSystemPool$", "-test.v")
		cmd.Env = append(os.Environ(), trustChildEnv+"="+leafFile, EnvSSLCertDir+"="+strings.Join(certDirs, ":"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return string(out)
	}
	// As the gateway pod's variable is rendered, with the mount as it is.
	if out := run(append(append([]string(nil), systemCertDirs...), vol)); !strings.Contains(out, "TRUST verified") {
		t.Errorf("with the trust directory: %s", out)
	}
	if out := run(systemCertDirs); !strings.Contains(out, "TRUST refused") {
		t.Errorf("without it (the control): %s", out)
	}
}

// verifyLeafChild prints whether the system pool verifies the leaf.
func verifyLeafChild(t *testing.T, leafFile string) {
	raw, err := os.ReadFile(leafFile)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(raw)
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: leaf.DNSNames[0]}); err != nil {
		fmt.Println("TRUST refused:", err)
		return
	}
	fmt.Println("TRUST verified")
}

// caAndLeaf is a fresh CA and a server certificate for host it signed, PEM.
func caAndLeaf(t *testing.T, host string) (caPEM, leafPEM []byte) {
	t.Helper()
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "corp CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host}, DNSNames: []string{host},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, leafTmpl, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
