package controllers

import (
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// The Secret NAME-gateway-tokens is the one place the running gateway
// learns its callers' tokens from: mounted whole as a directory, it turns
// an orchestrator added, removed or rotated into a change of files in a
// pod that keeps running. Its values are derived, never the source: the
// source of an orchestrator's bearer token is its generated Secret
// NAME-orch-O (key token) or the bring-your-own Secret of tokenSecretRef,
// and of its sandbox token always NAME-orch-O (key sandbox-token).
//
// A generated NAME-orch-O stays immutable, one Secret per generation of
// credentials: a rotation replaces it (delete, create) so that it always
// shows the current token, the one users copy into their orchestrator.
// What the tokens Secret adds is memory: when a source value differs from
// the current value it holds, the old one is kept as a previous line until
// the grace period ends, recorded in an annotation per key. A rotation, a
// bring-your-own Secret edited by hand and a deleted generated Secret are
// therefore the same event with the same overlap.

// AnnotationRotationPrefix prefixes, on NAME-gateway-tokens, the annotation
// per key holding when its previous tokens stop being accepted (RFC 3339).
const AnnotationRotationPrefix = "rotation.garra.garraia.io/"

// DefaultTokenRotationGrace is the overlap when the spec names none.
const DefaultTokenRotationGrace = 5 * time.Minute

// maxPreviousTokens bounds the lines kept per key: rotating twice within
// one grace period keeps both earlier tokens, not an unbounded history.
const maxPreviousTokens = 2

// tokenSet is one key of the tokens Secret: the current token and the
// replaced ones still accepted until Until (zero when there are none).
type tokenSet struct {
	Current  string
	Previous []string
	Until    time.Time
}

// nextTokenSet is the rotation state machine of one key. live is what the
// tokens Secret holds, source the value the source Secret holds now ("" when
// it is missing: no token is accepted, the orchestrator fails closed).
//
//   - nothing live: the source, alone;
//   - the source changed: the source, with the live current (and the live
//     previous ones still in grace) accepted until now+grace;
//   - unchanged, in grace: as it is;
//   - unchanged, grace over: the source alone.
func nextTokenSet(live tokenSet, source string, now time.Time, grace time.Duration) tokenSet {
	if source == "" {
		return tokenSet{}
	}
	inGrace := len(live.Previous) > 0 && now.Before(live.Until)
	switch {
	case live.Current == "":
		return tokenSet{Current: source}
	case live.Current != source:
		prev := []string{live.Current}
		if inGrace {
			for _, p := range live.Previous {
				if p != source && len(prev) < maxPreviousTokens {
					prev = append(prev, p)
				}
			}
		}
		return tokenSet{Current: source, Previous: prev, Until: now.Add(grace)}
	case inGrace:
		return live
	}
	return tokenSet{Current: source}
}

// callerLines renders a bearer token key: current first. The gateway
// accepts any line, so the order only matters for reading it back.
func (t tokenSet) callerLines() string {
	return strings.Join(append([]string{t.Current}, t.Previous...), "\n")
}

// sandboxLines renders a sandbox token key: previous first. The gateway
// sends the first line and the sandbox accepts any, and the kubelet updates
// the two pods' files at different moments: keeping the old token first
// until the grace ends means the gateway only ever sends a token the
// sandbox already holds (the new one reaches the sandbox, next to the old,
// long before the gateway starts sending it).
func (t tokenSet) sandboxLines() string {
	return strings.Join(append(append([]string(nil), t.Previous...), t.Current), "\n")
}

func (t tokenSet) render(sandbox bool) []byte {
	if t.Current == "" {
		return []byte{}
	}
	if sandbox {
		return []byte(t.sandboxLines())
	}
	return []byte(t.callerLines())
}

// parseTokenSet reads one key back (the inverse of render).
func parseTokenSet(data []byte, sandbox bool, until string) tokenSet {
	var lines []string
	for l := range strings.SplitSeq(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return tokenSet{}
	}
	t := tokenSet{Current: lines[0], Previous: lines[1:]}
	if sandbox {
		t = tokenSet{Current: lines[len(lines)-1], Previous: lines[:len(lines)-1]}
	}
	if len(t.Previous) == 0 {
		t.Previous = nil
		return t
	}
	// An unreadable expiry retires the previous tokens now: fail closed.
	if u, err := time.Parse(time.RFC3339, until); err == nil {
		t.Until = u
	}
	return t
}

// tokensSecretData is what NAME-gateway-tokens holds for gs: per
// orchestrator of ms its bearer and sandbox keys, from live (nil when
// absent) moved on by nextTokenSet, and the values of its credentials
// (credentialsData: no overlap, a revoked credential stops at once); and
// the latest expiry of a previous token per orchestrator ID (for the
// status and the requeue).
func tokensSecretData(gs *garrav1alpha1.GarraServer, ms []member, live *corev1.Secret, values map[string][]byte, now time.Time) (map[string][]byte, map[string]string, map[string]time.Time) {
	grace := tokenGrace(gs)
	data := map[string][]byte{}
	ann := map[string]string{}
	until := map[string]time.Time{}
	for _, m := range ms {
		maps.Copy(data, credentialsData(m, values))
		keys := []struct {
			key     string
			ref     secretRef
			sandbox bool
		}{
			{m.tokenKey(), orchTokenRef(m), false},
			{m.tokenKey() + SandboxKeySuffix, sandboxTokenRef(m), true},
		}
		if !usesToken(m.OrchestratorSettings) {
			// No bearer of its own: only the gateway's sandbox token.
			keys = keys[1:]
		}
		for _, k := range keys {
			var cur tokenSet
			if live != nil {
				cur = parseTokenSet(live.Data[k.key], k.sandbox, live.Annotations[AnnotationRotationPrefix+k.key])
			}
			next := nextTokenSet(cur, sourceToken(values[k.ref.valueKey()]), now, grace)
			data[k.key] = next.render(k.sandbox)
			if len(next.Previous) > 0 {
				ann[AnnotationRotationPrefix+k.key] = next.Until.UTC().Format(time.RFC3339)
				if u, ok := until[m.ID]; !ok || next.Until.After(u) {
					until[m.ID] = next.Until
				}
			}
		}
	}
	return data, ann, until
}

// sourceToken is the token a source Secret key holds: its first non-blank
// line. A key is one token; the overlap is the operator's to keep, and a
// value of several lines would otherwise never equal the current line it
// is compared with, and look changed on every pass.
func sourceToken(v []byte) string {
	for l := range strings.SplitSeq(string(v), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// tokenGrace is spec.gateway.tokenRotationGracePeriod or its default.
func tokenGrace(gs *garrav1alpha1.GarraServer) time.Duration {
	if g := gs.Spec.Gateway.TokenRotationGracePeriod; g != nil && g.Duration > 0 {
		return g.Duration
	}
	return DefaultTokenRotationGrace
}

// sandboxTokenSecret is the Secret m's sandbox pod reads its token lines
// from (named as its sandbox, in its namespace, owned as its other
// objects): the lines NAME-gateway-tokens holds for m's sandbox key, so the
// pod sees the same overlap the gateway keeps, and, with egress: gateway,
// the public certificate of the gateway's egress CA. Nothing else: no
// credential, no CA key.
func sandboxTokenSecret(m member, data map[string][]byte) *corev1ac.SecretApplyConfiguration {
	return corev1ac.Secret(m.sandboxTokenName(), m.at.Namespace).
		WithLabels(m.labels()).
		WithOwnerReferences(m.at.ownerRefs()...).
		WithType(corev1.SecretTypeOpaque).
		WithData(data)
}

// sandboxSecretData is what m's own Secret holds: its token lines and,
// going out through the gateway, the egress CA's certificate.
func sandboxSecretData(m member, lines, egressCA []byte) map[string][]byte {
	data := map[string][]byte{KeySandboxToken: lines}
	if egressGateway(m) {
		data[KeyEgressCA] = egressCA
	}
	return data
}

// tokensSecret is NAME-gateway-tokens as an apply configuration.
func tokensSecret(gs *garrav1alpha1.GarraServer, data map[string][]byte, ann map[string]string) *corev1ac.SecretApplyConfiguration {
	s := corev1ac.Secret(tokensName(gs), gs.Namespace).
		WithLabels(labels(gs, ComponentGateway, "")).
		WithOwnerReferences(ownerRefs(gs)...).
		WithType(corev1.SecretTypeOpaque).
		WithData(data)
	if len(ann) > 0 {
		s.WithAnnotations(ann)
	}
	return s
}

// tokensSecretCurrent reports whether live already is what the builder
// wants. The cache strips managed fields from Secrets, so the generic
// applyIfChanged cannot be used: this compares what the operator sets.
func tokensSecretCurrent(gs *garrav1alpha1.GarraServer, live *corev1.Secret, data map[string][]byte, ann map[string]string) bool {
	return secretCurrent(live, gs.UID, labels(gs, ComponentGateway, ""), data, ann)
}

// secretCurrent reports whether live, a Secret the operator derives, is
// controlled by owner and holds exactly data, the labels lbl and the
// rotation annotations ann.
func secretCurrent(live *corev1.Secret, owner types.UID, lbl map[string]string, data map[string][]byte, ann map[string]string) bool {
	if live == nil || live.Type != corev1.SecretTypeOpaque {
		return false
	}
	if ref := metav1.GetControllerOfNoCopy(live); ref == nil || ref.UID != owner {
		return false
	}
	for k, v := range lbl {
		if live.Labels[k] != v {
			return false
		}
	}
	liveAnn := map[string]string{}
	for k, v := range live.Annotations {
		if strings.HasPrefix(k, AnnotationRotationPrefix) {
			liveAnn[k] = v
		}
	}
	if !maps.Equal(liveAnn, ann) || len(live.Data) != len(data) {
		return false
	}
	for k, v := range data {
		if lv, ok := live.Data[k]; !ok || string(lv) != string(v) {
			return false
		}
	}
	return true
}
