package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// ensureSecrets creates the generated Secrets that do not exist: the
// gateway's api-key (unless the spec names one), each orchestrator's
// token and sandbox-token, and the egress CA when a member needs it. An
// existing one is never written, whatever it holds (only an egress CA of
// the operator's own that no longer works is replaced); a bring-your-own
// Secret is only ever read.
func (r *GarraServerReconciler) ensureSecrets(ctx context.Context, s *reconcileState) error {
	gs := s.gs
	if gs.Spec.Gateway.APIKeySecretRef == nil {
		if err := r.ensureSecret(ctx, s, gs.Namespace, gatewayName(gs), func() (*corev1.Secret, error) {
			return gatewaySecret(gs, r.Rand)
		}); err != nil {
			return err
		}
	}
	for _, m := range s.members {
		if err := r.ensureSecret(ctx, s, m.at.Namespace, m.orchSecretName(), func() (*corev1.Secret, error) {
			return orchestratorSecret(m, r.Rand)
		}); err != nil {
			if err := s.isolate(m, err); err != nil {
				return err
			}
		}
	}
	return r.ensureEgressCA(ctx, s)
}

func (r *GarraServerReconciler) ensureSecret(ctx context.Context, s *reconcileState, ns, name string, build func() (*corev1.Secret, error)) error {
	key := client.ObjectKey{Namespace: ns, Name: name}
	sec := &corev1.Secret{}
	err := r.Get(ctx, key, sec)
	if err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	sec, err = build()
	if err != nil {
		return err
	}
	err = r.Create(ctx, sec, client.FieldOwner(FieldOwner))
	switch {
	case err == nil:
		r.eventAbout(s.gs, sec, false, garrav1alpha1.EventSecretGenerated, "Create", "generated Secret %s/%s (keys %s)", ns, name, keyList(sec))
	case apierrors.IsAlreadyExists(err):
		// It exists but the cache has not seen it yet: read, never overwrite.
		sec = &corev1.Secret{}
		if err := r.APIReader.Get(ctx, key, sec); err != nil {
			return fmt.Errorf("read existing Secret %s: %w", name, err)
		}
	default:
		return fmt.Errorf("create Secret %s: %w", name, err)
	}
	s.remember(sec)
	return nil
}

// readSecrets reads every Secret key the pods reference, through the cache.
// A missing Secret or key is recorded (the status says which), not an
// error: the pods are still applied and roll when it appears.
func (r *GarraServerReconciler) readSecrets(ctx context.Context, s *reconcileState) error {
	for _, ref := range gatewaySecretRefs(s.gs, s.members) {
		if _, ok := s.values[ref.valueKey()]; ok {
			continue
		}
		ns := ref.Namespace
		if ns == "" {
			ns = s.gs.Namespace
		}
		sec := &corev1.Secret{}
		err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Secret}, sec)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("read Secret %s: %w", ref.Secret, err)
		default:
			s.remember(sec)
		}
		if _, ok := s.values[ref.valueKey()]; !ok {
			s.missing = append(s.missing, ref)
		}
	}
	return nil
}

// remember keeps every key of sec, under secretRef.valueKey.
func (s *reconcileState) remember(sec *corev1.Secret) {
	ref := secretRef{Secret: sec.Name}
	if sec.Namespace != s.gs.Namespace {
		ref.Namespace = sec.Namespace
	}
	for k, v := range sec.Data {
		ref.Key = k
		s.values[ref.valueKey()] = v
	}
	for k, v := range sec.StringData {
		ref.Key = k
		s.values[ref.valueKey()] = []byte(v)
	}
}

// gatewayHash is the gateway's pod template annotation: the secrets its
// template refers to. Policy (config.yml) and tokens are left out on
// purpose: the gateway reloads them live, and a new pod would cut every
// team's calls in flight and reset every budget.
func (s *reconcileState) gatewayHash() string {
	return inputsHash(gatewayPodRefs(s.gs, s.members), s.values)
}

func keyList(sec *corev1.Secret) string {
	out := ""
	for _, k := range sortedKeys(sec.Data) {
		if out != "" {
			out += ", "
		}
		out += k
	}
	return out
}

// rotateTokens handles the rotate-token annotation: for each orchestrator
// it names, the generated Secret NAME-orch-O is replaced by one with fresh
// credentials (its token, unused while the orchestrator brings its own, and
// its sandbox-token). The tokens Secret then sees the change and keeps the
// old values valid for the grace period (tokensSecretData). The annotation
// is removed once the tokens Secret holds the new values (ackRotation), so
// annotating again rotates again; a name that is no orchestrator of the
// spec is reported in a Warning event and ignored.
//
// An attached Orchestrator asks for its own with the same annotation on
// itself (a team cannot annotate the server): any value rotates it, and
// it is removed the same way.
func (r *GarraServerReconciler) rotateTokens(ctx context.Context, s *reconcileState) error {
	for _, m := range s.members {
		if !m.attached {
			continue
		}
		if _, ok := m.ob.Annotations[garrav1alpha1.AnnotationRotateToken]; !ok {
			continue
		}
		if err := r.replaceOrchSecret(ctx, s, m); err != nil {
			return err
		}
		s.rotatedAttached = append(s.rotatedAttached, m.ob)
	}
	val, ok := s.gs.Annotations[garrav1alpha1.AnnotationRotateToken]
	if !ok {
		return nil
	}
	known := map[string]member{}
	for _, m := range inlineMembers(s.gs) {
		known[m.Name] = m
	}
	for _, name := range rotateTokenNames(val) {
		m, ok := known[name]
		if !ok {
			r.event(s.gs, true, garrav1alpha1.EventTokenRotated, "Rotate", "%s names %q, which is no orchestrator of this GarraServer: ignored", garrav1alpha1.AnnotationRotateToken, name)
			continue
		}
		if err := r.replaceOrchSecret(ctx, s, m); err != nil {
			return err
		}
	}
	s.rotateAck = true
	return nil
}

// rotateTokenNames splits the annotation's value: names separated by
// commas, blanks ignored, each once.
func rotateTokenNames(val string) []string {
	seen := map[string]bool{}
	var out []string
	for n := range strings.SplitSeq(val, ",") {
		if n = strings.TrimSpace(n); n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// replaceOrchSecret deletes m's generated Secret (read around the cache,
// which may lag) and creates it anew.
func (r *GarraServerReconciler) replaceOrchSecret(ctx context.Context, s *reconcileState, m member) error {
	name := m.orchSecretName()
	old := &corev1.Secret{}
	switch err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: m.at.Namespace, Name: name}, old); {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("read Secret %s: %w", name, err)
	default:
		if err := r.Delete(ctx, old, client.Preconditions{UID: &old.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete Secret %s: %w", name, err)
		}
	}
	sec, err := orchestratorSecret(m, r.Rand)
	if err != nil {
		return err
	}
	if err := r.Create(ctx, sec, client.FieldOwner(FieldOwner)); err != nil {
		return fmt.Errorf("create Secret %s: %w", name, err)
	}
	s.remember(sec)
	r.event(s.gs, false, garrav1alpha1.EventTokenRotated, "Rotate", "orchestrator %s: new tokens in Secret %s; the previous ones stay valid for %s",
		m.ID, name, tokenGrace(s.gs))
	if m.attached && r.Recorder != nil {
		// The team reads its own namespace's events, not the server's.
		r.Recorder.Eventf(m.ob, nil, corev1.EventTypeNormal, garrav1alpha1.EventTokenRotated, "Rotate",
			"new tokens in Secret %s; the previous ones stay valid for %s", name, tokenGrace(s.gs))
	}
	return nil
}

// ackRotation removes the rotate-token annotation once handled. The
// optimistic lock makes a value written meanwhile survive, to be handled
// on the next pass.
func (r *GarraServerReconciler) ackRotation(ctx context.Context, s *reconcileState) error {
	for _, ob := range s.rotatedAttached {
		s.acked = true
		if err := r.Patch(ctx, ob, client.RawPatch(types.JSONPatchType, unannotatePatch(ob))); err != nil && !apierrors.IsInvalid(err) {
			// The rotation is done; only the annotation stays, and the
			// next pass would rotate again: say so on the Orchestrator.
			if err := s.isolate(attachedMember(s.gs, ob), fmt.Errorf("remove annotation %s: %w", garrav1alpha1.AnnotationRotateToken, err)); err != nil {
				return err
			}
		}
	}
	s.rotatedAttached = nil
	if !s.rotateAck {
		return nil
	}
	// The same test-and-remove as for an Orchestrator: a lock on the
	// resourceVersion failed whenever the server changed since this pass
	// read it (its status, a label), the pass was retried, and the retry
	// rotated a second time, ending the first rotation's overlap at once.
	if err := r.Patch(ctx, s.gs, client.RawPatch(types.JSONPatchType, unannotatePatch(s.gs))); err != nil && !apierrors.IsInvalid(err) {
		return fmt.Errorf("remove annotation %s: %w", garrav1alpha1.AnnotationRotateToken, err)
	}
	s.rotateAck = false
	s.acked = true
	return nil
}

// unannotatePatch removes the rotate-token annotation from ob if it still
// holds the value this pass handled. Statuses change an object's
// resourceVersion all the time (an Orchestrator's is written by its own
// controller), so the value is what is compared, not the version: a value
// written meanwhile fails the test (Invalid), survives, and is handled on
// the next pass.
func unannotatePatch(ob client.Object) []byte {
	path := "/metadata/annotations/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(garrav1alpha1.AnnotationRotateToken)
	val, _ := json.Marshal(ob.GetAnnotations()[garrav1alpha1.AnnotationRotateToken])
	return []byte(`[{"op":"test","path":"` + path + `","value":` + string(val) + `},{"op":"remove","path":"` + path + `"}]`)
}
