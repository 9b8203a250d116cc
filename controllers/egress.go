package controllers

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/config"
)

// Egress through the gateway (sandbox.egress: gateway): the sandbox's only
// way out is the gateway's forward proxy, which admits the member's hosts
// and adds its credentials on the way. The operator's part is the wiring:
// the proxy's listener and CA in the gateway, each credential's value
// copied from the member's own namespace into the tokens Secret (where the
// gateway reloads it live), the CA's public half and the proxy's address
// in the sandbox, and a NetworkPolicy that leaves the sandbox no other
// route. No credential value is ever in the sandbox's pod, its Secret or
// its environment.

// EgressPort is the gateway's egress proxy port, named EgressPortName on
// the container and the Service.
const (
	EgressPort     = 3128
	EgressPortName = "egress"
)

// Keys and files of the egress wiring.
const (
	// KeyEgressCA is the CA certificate's key in a sandbox's own Secret,
	// and its file name in the sandbox pod.
	KeyEgressCA = "egress-ca.crt"
	// KeyCredentialPrefix starts a credential's key in the tokens Secret:
	// cred.<member token key>.<credential name>. No token key holds two
	// dots, so it clashes with none.
	KeyCredentialPrefix = "cred."
	// egressCADir is where the gateway finds its CA's certificate and key.
	egressCADir = SecretsDir + "/egress-ca"
	// egressTrustDir is where the gateway finds the extra upstream CAs of
	// spec.gateway.egress.trustedCASecretRef.
	egressTrustDir = SecretsDir + "/egress-trust"
	// KeyTrustedCA is that file's name.
	KeyTrustedCA = "ca.crt"
)

// Variables of the egress wiring: the sandbox's (read by `garra sandbox`)
// and the gateway's extra trust directories.
const (
	EnvEgressProxy  = "GARRA_EGRESS_PROXY"
	EnvEgressCAFile = "GARRA_EGRESS_CA_FILE"
	// EnvSSLCertDir is read by Go's crypto/x509 on Linux: certificates in
	// these directories join the system pool, whose bundle file still
	// loads, so a private upstream CA is trusted without a gateway flag.
	EnvSSLCertDir = "SSL_CERT_DIR"
)

// systemCertDirs are Go's own default directories on Linux, kept when
// SSL_CERT_DIR replaces them with a list that adds egressTrustDir.
var systemCertDirs = []string{"/etc/ssl/certs", "/etc/pki/tls/certs"}

// EgressCAFile is the sandbox's copy of the gateway's CA certificate.
const EgressCAFile = SecretsDir + "/" + KeyEgressCA

// egressCAName is the Secret of the gateway's egress CA.
func egressCAName(gs *garrav1alpha1.GarraServer) string { return gs.Name + "-gateway-egress-ca" }

// EgressCACertFile is the CA's certificate in the gateway pod.
func EgressCACertFile() string { return egressCADir + "/tls.crt" }

// EgressCAKeyFile is the CA's key in the gateway pod.
func EgressCAKeyFile() string { return egressCADir + "/tls.key" }

// EgressProxyURL is the in-cluster URL of gs's egress proxy.
func EgressProxyURL(gs *garrav1alpha1.GarraServer) string {
	return "http://" + gatewayName(gs) + "." + gs.Namespace + ".svc:" + strconv.Itoa(EgressPort)
}

// egressGateway: m's sandbox goes out through the gateway.
func egressGateway(m member) bool { return m.Sandbox.Egress == garrav1alpha1.EgressGateway }

// anyEgressGateway: the gateway runs the proxy for some member of ms.
func anyEgressGateway(ms []member) bool { return slices.ContainsFunc(ms, egressGateway) }

// credentialKey is credential name's key in the tokens Secret.
func (m member) credentialKey(name string) string {
	return KeyCredentialPrefix + m.tokenKey() + "." + name
}

// CredentialFile is a credential's value in the gateway's pod.
func CredentialFile(key string) string { return TokensDir + "/" + key }

// credentialRef is where m's i-th credential's value comes from: a key of
// a Secret in m's own namespace (SecretKeySelector has no namespace, so no
// other can be named).
func credentialRef(m member, i int) secretRef {
	c := m.Credentials[i]
	return m.secretRef(c.SecretRef.Name, c.SecretRef.Key, m.credentialField(i)+".secretRef")
}

// credentialField is the path of m's i-th credential in messages.
func (m member) credentialField(i int) string {
	return m.Field + ".credentials[" + strconv.Itoa(i) + "]"
}

// credentialRefs are the source keys of m's credentials.
func credentialRefs(m member) []secretRef {
	refs := make([]secretRef, 0, len(m.Credentials))
	for i := range m.Credentials {
		refs = append(refs, credentialRef(m, i))
	}
	return refs
}

// credentialsData is what the tokens Secret holds for m's credentials: per
// credential its source value as it is (the gateway trims it), or empty
// while the source is missing, so that the gateway refuses that credential
// alone instead of a whole config whose file is absent.
func credentialsData(m member, values map[string][]byte) map[string][]byte {
	out := map[string][]byte{}
	for i, c := range m.Credentials {
		v := values[credentialRef(m, i).valueKey()]
		if v == nil {
			v = []byte{}
		}
		out[m.credentialKey(c.Name)] = v
	}
	return out
}

// renderEgress is m's egress block and credentials in the gateway config's
// words: nil unless m goes out through the gateway.
func renderEgress(m member) (*config.OrchestratorEgress, []config.Credential) {
	if !egressGateway(m) {
		return nil, nil
	}
	eg := &config.OrchestratorEgress{Hosts: m.Sandbox.EgressHosts}
	var creds []config.Credential
	for _, c := range m.Credentials {
		creds = append(creds, config.Credential{
			Name:         c.Name,
			File:         CredentialFile(m.credentialKey(c.Name)),
			Hosts:        c.Hosts,
			Methods:      c.Methods,
			PathPrefixes: c.PathPrefixes,
			Inject: config.CredentialInject{
				Header:   c.Inject.Header,
				Scheme:   renderScheme(c.Inject.Scheme),
				Username: c.Inject.Username,
			},
		})
	}
	return eg, creds
}

// renderScheme is the CRD's scheme in the config's words; "" leaves the
// gateway's default (bearer).
func renderScheme(s garrav1alpha1.CredentialScheme) string {
	switch s {
	case garrav1alpha1.CredentialBearer:
		return config.SchemeBearer
	case garrav1alpha1.CredentialBasic:
		return config.SchemeBasic
	case garrav1alpha1.CredentialNone:
		return config.SchemeNone
	}
	return ""
}

// renderGatewayEgress is gateway.egress: the listener and the CA files
// when some member goes out through the gateway, else off.
func renderGatewayEgress(ms []member) config.GatewayEgress {
	if !anyEgressGateway(ms) {
		return config.GatewayEgress{}
	}
	return config.GatewayEgress{
		Listen:     ":" + strconv.Itoa(EgressPort),
		CACertFile: EgressCACertFile(),
		CAKeyFile:  EgressCAKeyFile(),
	}
}

// egressCARef is the CA certificate as a gateway pod input.
func egressCARef(gs *garrav1alpha1.GarraServer) secretRef {
	return secretRef{Secret: egressCAName(gs), Key: "tls.crt", Field: "generated"}
}

// trustedCARef is spec.gateway.egress.trustedCASecretRef, if set.
func trustedCARef(gs *garrav1alpha1.GarraServer) (secretRef, bool) {
	if e := gs.Spec.Gateway.Egress; e != nil && e.TrustedCASecretRef != nil {
		return secretRef{Secret: e.TrustedCASecretRef.Name, Key: e.TrustedCASecretRef.Key, Field: "spec.gateway.egress.trustedCASecretRef"}, true
	}
	return secretRef{}, false
}

// egressCAHash is the sandbox pod template's annotation for the CA it
// trusts: the sandbox builds its trust bundle at start, so a new CA (a
// deleted CA Secret generated anew) must start a new pod.
func egressCAHash(caCert []byte) string {
	if len(caCert) == 0 {
		return ""
	}
	sum := sha256.Sum256(caCert)
	return hex.EncodeToString(sum[:])
}
