package controllers

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/config"
)

// GeneratedBytes is the entropy of every generated credential.
const GeneratedBytes = 32

// newCredential is GeneratedBytes random bytes, base64url without padding.
func newCredential(rand io.Reader) (string, error) {
	b := make([]byte, GeneratedBytes)
	if _, err := io.ReadFull(rand, b); err != nil {
		return "", fmt.Errorf("generate credential: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// generatedSecret is a Secret of fresh credentials, one per key. It is
// created once and immutable: the API server itself refuses to rewrite it,
// and the controller never updates it (a deleted one is generated anew).
func generatedSecret(at placement, name string, lbl map[string]string, rand io.Reader, keys ...string) (*corev1.Secret, error) {
	data := make(map[string][]byte, len(keys))
	for _, k := range keys {
		v, err := newCredential(rand)
		if err != nil {
			return nil, err
		}
		data[k] = []byte(v)
	}
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       at.Namespace,
			Labels:          lbl,
			OwnerReferences: []metav1.OwnerReference{at.Owner},
		},
		Immutable: ptr.To(true),
		Type:      corev1.SecretTypeOpaque,
		Data:      data,
	}, nil
}

// secretRef is one Secret key a pod reads, and why (for messages).
type secretRef struct {
	Secret, Key string
	Field       string // the spec field or generated object it comes from
	// Namespace is set for a Secret outside the server's namespace (an
	// attached Orchestrator's), "" in the server's.
	Namespace string
}

// String is how messages and the inputs hash name the key.
func (r secretRef) String() string { return r.Secret + "/" + r.Key }

// valueKey is where reconcileState.values holds the key's value: two teams
// may each have a Secret of the same name.
func (r secretRef) valueKey() string {
	if r.Namespace == "" {
		return r.String()
	}
	return r.Namespace + "/" + r.String()
}

// gatewayAPIKeyRef is where the gateway's owner key comes from.
func gatewayAPIKeyRef(gs *garrav1alpha1.GarraServer) secretRef {
	if ref := gs.Spec.Gateway.APIKeySecretRef; ref != nil {
		return secretRef{Secret: ref.Name, Key: ref.Key, Field: "spec.gateway.apiKeySecretRef"}
	}
	return secretRef{Secret: gatewayName(gs), Key: KeyAPIKey, Field: "generated"}
}

// orchTokenRef is where m's bearer token comes from, in m's namespace.
func orchTokenRef(m member) secretRef {
	if ref := m.TokenSecretRef; ref != nil {
		return m.secretRef(ref.Name, ref.Key, m.Field+".tokenSecretRef")
	}
	return m.secretRef(m.orchSecretName(), KeyToken, "generated")
}

func sandboxTokenRef(m member) secretRef {
	return m.secretRef(m.orchSecretName(), KeySandboxToken, "generated")
}

// secretRef is a key of a Secret in m's namespace.
func (m member) secretRef(secret, key, field string) secretRef {
	r := secretRef{Secret: secret, Key: key, Field: field}
	if m.at.Namespace != m.gs.Namespace {
		r.Namespace = m.at.Namespace
	}
	return r
}

// envRef is a pod variable read from a Secret key.
type envRef struct {
	Env string
	Ref secretRef
}

// gatewayEnvRefs are the gateway's secret-backed variables, in pod order:
// the keys of services outside Garra (the LLM provider, Brave, Telegram), which
// the gateway's libraries take from the environment. The gateway is
// non-dumpable, so its tool children cannot read them there.
func gatewayEnvRefs(gs *garrav1alpha1.GarraServer) []envRef {
	var refs []envRef
	if ref := gs.Spec.LLM.APIKeySecretRef; ref != nil {
		refs = append(refs, envRef{EnvLLMAPIKey, secretRef{Secret: ref.Name, Key: ref.Key, Field: "spec.llm.apiKeySecretRef"}})
	}
	if ws := gs.Spec.Gateway.WebSearch; ws != nil {
		refs = append(refs, envRef{config.EnvBraveAPIKey, secretRef{Secret: ws.APIKeySecretRef.Name, Key: ws.APIKeySecretRef.Key, Field: "spec.gateway.webSearch.apiKeySecretRef"}})
	}
	if ch := gs.Spec.Channels; ch != nil && ch.Telegram != nil && ch.Telegram.BotTokenSecretRef != nil {
		ref := ch.Telegram.BotTokenSecretRef
		refs = append(refs, envRef{EnvTelegramToken, secretRef{Secret: ref.Name, Key: ref.Key, Field: "spec.channels.telegram.botTokenSecretRef"}})
	}
	if ref := gs.Spec.Gateway.Store.DSNSecretRef; ref != nil && sharedStore(gs) {
		refs = append(refs, envRef{EnvStoreDSN, secretRef{Secret: ref.Name, Key: ref.Key, Field: "spec.gateway.store.dsnSecretRef"}})
	}
	return refs
}

// gatewayPodRefs are the Secret keys the gateway pod template itself
// refers to: the owner key (a file of its own volume), the variables, and
// the CAs of the egress proxy. Their values are pod template inputs: the
// LLM, Brave and Telegram keys are read from the environment once, at
// start, the owner key's reference is in the volume, and the CAs are read
// at start (the system pool, the proxy's signer), so a change of any needs
// a new process.
func gatewayPodRefs(gs *garrav1alpha1.GarraServer, ms []member) []secretRef {
	refs := []secretRef{gatewayAPIKeyRef(gs)}
	for _, er := range gatewayEnvRefs(gs) {
		refs = append(refs, er.Ref)
	}
	if anyEgressGateway(ms) {
		refs = append(refs, egressCARef(gs))
	}
	if ref, ok := trustedCARef(gs); ok {
		refs = append(refs, ref)
	}
	return refs
}

// gatewaySecretRefs is every Secret key the gateway reads, directly or
// through NAME-gateway-tokens: what must exist for it to serve everyone of
// ms.
func gatewaySecretRefs(gs *garrav1alpha1.GarraServer, ms []member) []secretRef {
	refs := gatewayPodRefs(gs, ms)
	for _, m := range ms {
		refs = append(refs, memberSecretRefs(m)...)
	}
	return refs
}

// memberSecretRefs are the keys of m's tokens and credentials.
func memberSecretRefs(m member) []secretRef {
	var refs []secretRef
	if usesToken(m.OrchestratorSettings) {
		refs = append(refs, orchTokenRef(m))
	}
	refs = append(refs, sandboxTokenRef(m))
	return append(refs, credentialRefs(m)...)
}

// serverMissing is the part of missing that counts on the server's own
// status: keys the gateway needs whoever calls (its pod's Secrets) and keys
// of the inline entries, which the platform writes. An attached
// Orchestrator's keys are its team's: the gateway refuses only that
// orchestrator while one is missing, so its own status says so, and one
// team cannot flip the platform's GatewayReady. Membership decides, not
// the namespace: an attached Orchestrator may share the server's. A key
// both name counts on the server, under the server's own field.
func serverMissing(gs *garrav1alpha1.GarraServer, ms []member, missing []secretRef) []secretRef {
	own := map[secretRef]bool{}
	for _, ref := range gatewayPodRefs(gs, ms) {
		own[ref] = true
	}
	for _, m := range ms {
		if !m.attached {
			for _, ref := range memberSecretRefs(m) {
				own[ref] = true
			}
		}
	}
	var out []secretRef
	for _, ref := range missing {
		if own[ref] {
			out = append(out, ref)
		}
	}
	return out
}

// ReferencedSecretNames are the Secrets gs names in its spec (not the
// generated ones), for the watch index.
func ReferencedSecretNames(gs *garrav1alpha1.GarraServer) []string {
	seen := map[string]bool{}
	for _, ref := range gatewaySecretRefs(gs, inlineMembers(gs)) {
		if ref.Field != "generated" {
			seen[ref.Secret] = true
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// inputsHash is the pod template annotation: SHA-256 over the value of
// every secret key the pod template refers to (a missing one hashes as
// missing, so its appearance rolls the pod too). The config and the tokens
// are not inputs: they reach the running pod through mounted volumes.
func inputsHash(refs []secretRef, values map[string][]byte) string {
	h := sha256.New()
	for _, r := range refs {
		v, ok := values[r.valueKey()]
		if !ok {
			_, _ = fmt.Fprintf(h, "secret %s missing\n", r)
			continue
		}
		_, _ = fmt.Fprintf(h, "secret %s %d\n", r, len(v))
		_, _ = h.Write(v)
	}
	return hex.EncodeToString(h.Sum(nil))
}
