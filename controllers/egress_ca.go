package controllers

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/config"
)

// The gateway's egress CA signs the certificates its proxy presents for
// the hosts it adds a credential to; every sandbox with egress: gateway
// trusts it. It is generated once per GarraServer, the first time a member
// needs it, and kept: a new CA means new trust in every sandbox, so it is
// replaced only when it no longer works (unreadable, not a CA, expired or
// about to), and only when the operator made it. One the user put there
// first (their own CA) is used as it is and never written.

// EgressCAValidity is how long a generated CA is valid.
const EgressCAValidity = 10 * 365 * 24 * time.Hour

// egressCARenewBefore is how close to its end a CA is replaced, so that a
// replacement never finds sandboxes holding an expired one.
const egressCARenewBefore = 30 * 24 * time.Hour

// newEgressCA is a fresh CA for gs: an ECDSA P-256 key and a self-signed
// certificate that may sign leaf certificates only (path length 0), in a
// kubernetes.io/tls Secret owned by gs. The key's entropy is the
// platform's; rnd draws the serial number.
func newEgressCA(gs *garrav1alpha1.GarraServer, rnd io.Reader, now time.Time) (*corev1.Secret, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rnd)
	if err != nil {
		return nil, fmt.Errorf("generate egress CA key: %w", err)
	}
	serial, err := rand.Int(rnd, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generate egress CA serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject: pkix.Name{
			Organization: []string{"Garra"},
			CommonName:   "Garra egress CA of GarraServer " + gs.Namespace + "/" + gs.Name,
		},
		// An hour back: a node whose clock is a little behind still
		// accepts it.
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(EgressCAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rnd, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("sign egress CA: %w", err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encode egress CA key: %w", err)
	}
	at := serverPlacement(gs)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:            egressCAName(gs),
			Namespace:       at.Namespace,
			Labels:          labels(gs, ComponentGateway, ""),
			OwnerReferences: []metav1.OwnerReference{at.Owner},
		},
		Immutable: ptr.To(true),
		Type:      corev1.SecretTypeTLS,
		Data: map[string][]byte{
			corev1.TLSCertKey:       pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			corev1.TLSPrivateKeyKey: pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
		},
	}, nil
}

// egressCAProblem says why crt and key are no usable egress CA at now, or
// "" when they are one: what the gateway checks (config.ParseEgressCA),
// and valid for egressCARenewBefore more, so that it is replaced before
// it stops working.
func egressCAProblem(crt, key []byte, now time.Time) string {
	pair, err := config.ParseEgressCA(crt, key, now)
	var bad *config.EgressCAError
	switch {
	case errors.As(err, &bad) && bad.Key:
		return "tls.key: " + bad.Reason
	case err != nil:
		return "tls.crt: " + err.Error()
	case now.Add(egressCARenewBefore).After(pair.Leaf.NotAfter):
		return "tls.crt: the CA expires at " + pair.Leaf.NotAfter.UTC().Format(time.RFC3339)
	}
	return ""
}

// ensureEgressCA makes sure gs has its egress CA when some member goes out
// through the gateway, and remembers its certificate for the sandboxes.
// A Secret the operator made that no longer works is replaced (the pods
// roll through their inputs hash); one of the user's that does not work
// makes the spec invalid, naming the Secret.
func (r *GarraServerReconciler) ensureEgressCA(ctx context.Context, s *reconcileState) error {
	if !anyEgressGateway(s.members) {
		return nil
	}
	gs := s.gs
	name := egressCAName(gs)
	build := func() (*corev1.Secret, error) { return newEgressCA(gs, r.Rand, r.now()) }
	if err := r.ensureSecret(ctx, s, gs.Namespace, name, build); err != nil {
		return err
	}
	crtRef := egressCARef(gs)
	if _, ok := s.values[crtRef.valueKey()]; !ok {
		// It existed already (ensureSecret remembers only what it
		// creates): read it through the cache.
		sec := &corev1.Secret{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: gs.Namespace, Name: name}, sec); err != nil {
			return fmt.Errorf("read Secret %s: %w", name, err)
		}
		s.remember(sec)
	}
	keyRef := secretRef{Secret: name, Key: corev1.TLSPrivateKeyKey}
	problem := egressCAProblem(s.values[crtRef.valueKey()], s.values[keyRef.valueKey()], r.now())
	if problem == "" {
		s.egressCA = s.values[crtRef.valueKey()]
		return nil
	}
	live := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: gs.Namespace, Name: name}, live); err != nil {
		return fmt.Errorf("read Secret %s: %w", name, err)
	}
	if !metav1.IsControlledBy(live, gs) {
		s.invalid = fmt.Sprintf("Secret %s holds no usable egress CA: %s; fix it, or delete it and the operator generates one", name, problem)
		return nil
	}
	if err := r.Delete(ctx, live, client.Preconditions{UID: &live.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete Secret %s: %w", name, err)
	}
	sec, err := build()
	if err != nil {
		return err
	}
	if err := r.Create(ctx, sec, client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("create Secret %s: %w", name, err)
	}
	r.event(gs, false, garrav1alpha1.EventSecretGenerated, "Create", "replaced Secret %s/%s, whose egress CA no longer worked: %s", gs.Namespace, name, problem)
	s.remember(sec)
	s.egressCA = sec.Data[corev1.TLSCertKey]
	return nil
}
