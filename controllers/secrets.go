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
func generatedSecret(gs *garrav1alpha1.GarraServer, name, component, orch string, rand io.Reader, keys ...string) (*corev1.Secret, error) {
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
			Namespace:       gs.Namespace,
			Labels:          labels(gs, component, orch),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(gs, serverKind)},
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
}

func (r secretRef) String() string { return r.Secret + "/" + r.Key }

// gatewayAPIKeyRef is where the gateway's owner key comes from.
func gatewayAPIKeyRef(gs *garrav1alpha1.GarraServer) secretRef {
	if ref := gs.Spec.Gateway.APIKeySecretRef; ref != nil {
		return secretRef{ref.Name, ref.Key, "spec.gateway.apiKeySecretRef"}
	}
	return secretRef{gatewayName(gs), KeyAPIKey, "generated"}
}

// orchTokenRef is where orchestrator o's bearer token comes from.
func orchTokenRef(gs *garrav1alpha1.GarraServer, o garrav1alpha1.OrchestratorSpec) secretRef {
	if ref := o.TokenSecretRef; ref != nil {
		return secretRef{ref.Name, ref.Key, "spec.orchestrators[" + o.Name + "].tokenSecretRef"}
	}
	return secretRef{orchSecretName(gs, o.Name), KeyToken, "generated"}
}

func sandboxTokenRef(gs *garrav1alpha1.GarraServer, o string) secretRef {
	return secretRef{orchSecretName(gs, o), KeySandboxToken, "generated"}
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
		refs = append(refs, envRef{EnvLLMAPIKey, secretRef{ref.Name, ref.Key, "spec.llm.apiKeySecretRef"}})
	}
	if ws := gs.Spec.Gateway.WebSearch; ws != nil {
		refs = append(refs, envRef{config.EnvBraveAPIKey, secretRef{ws.APIKeySecretRef.Name, ws.APIKeySecretRef.Key, "spec.gateway.webSearch.apiKeySecretRef"}})
	}
	if ch := gs.Spec.Channels; ch != nil && ch.Telegram != nil && ch.Telegram.BotTokenSecretRef != nil {
		ref := ch.Telegram.BotTokenSecretRef
		refs = append(refs, envRef{EnvTelegramToken, secretRef{ref.Name, ref.Key, "spec.channels.telegram.botTokenSecretRef"}})
	}
	if ref := gs.Spec.Gateway.Store.DSNSecretRef; ref != nil && sharedStore(gs) {
		refs = append(refs, envRef{EnvStoreDSN, secretRef{ref.Name, ref.Key, "spec.gateway.store.dsnSecretRef"}})
	}
	return refs
}

// gatewayPodRefs are the Secret keys the gateway pod template itself
// refers to: the owner key (a file of its own volume) and the variables.
// Their values are pod template inputs: the LLM, Brave and Telegram keys
// are read from the environment once, at start, and the owner key's
// reference is in the volume, so a change of either needs a new process.
func gatewayPodRefs(gs *garrav1alpha1.GarraServer) []secretRef {
	refs := []secretRef{gatewayAPIKeyRef(gs)}
	for _, er := range gatewayEnvRefs(gs) {
		refs = append(refs, er.Ref)
	}
	return refs
}

// gatewaySecretRefs is every Secret key the gateway reads, directly or
// through NAME-gateway-tokens: what must exist for it to serve everyone.
func gatewaySecretRefs(gs *garrav1alpha1.GarraServer) []secretRef {
	refs := gatewayPodRefs(gs)
	for _, o := range gs.Spec.Orchestrators {
		if usesToken(o) {
			refs = append(refs, orchTokenRef(gs, o))
		}
		refs = append(refs, sandboxTokenRef(gs, o.Name))
	}
	return refs
}

// ReferencedSecretNames are the Secrets gs names in its spec (not the
// generated ones), for the watch index.
func ReferencedSecretNames(gs *garrav1alpha1.GarraServer) []string {
	seen := map[string]bool{}
	for _, ref := range gatewaySecretRefs(gs) {
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
		v, ok := values[r.String()]
		if !ok {
			_, _ = fmt.Fprintf(h, "secret %s missing\n", r)
			continue
		}
		_, _ = fmt.Fprintf(h, "secret %s %d\n", r, len(v))
		_, _ = h.Write(v)
	}
	return hex.EncodeToString(h.Sum(nil))
}
