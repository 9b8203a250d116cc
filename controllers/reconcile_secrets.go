package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// ensureSecrets creates the generated Secrets that do not exist: the
// gateway's api-key (unless the spec names one) and each orchestrator's
// token and sandbox-token. An existing one is never written, whatever it
// holds; a bring-your-own Secret is only ever read.
func (r *GarraServerReconciler) ensureSecrets(ctx context.Context, s *reconcileState) error {
	gs := s.gs
	if gs.Spec.Gateway.APIKeySecretRef == nil {
		if err := r.ensureSecret(ctx, s, gatewayName(gs), func() (*corev1.Secret, error) {
			return gatewaySecret(gs, r.Rand)
		}); err != nil {
			return err
		}
	}
	for _, o := range gs.Spec.Orchestrators {
		if err := r.ensureSecret(ctx, s, orchSecretName(gs, o.Name), func() (*corev1.Secret, error) {
			return orchestratorSecret(gs, o.Name, r.Rand)
		}); err != nil {
			return err
		}
	}
	return nil
}

func (r *GarraServerReconciler) ensureSecret(ctx context.Context, s *reconcileState, name string, build func() (*corev1.Secret, error)) error {
	key := client.ObjectKey{Namespace: s.gs.Namespace, Name: name}
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
		r.event(s.gs, false, garrav1alpha1.EventSecretGenerated, "Create", "generated Secret %s (keys %s)", name, keyList(sec))
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
	for _, ref := range gatewaySecretRefs(s.gs) {
		if _, ok := s.values[ref.String()]; ok {
			continue
		}
		sec := &corev1.Secret{}
		err := r.Get(ctx, client.ObjectKey{Namespace: s.gs.Namespace, Name: ref.Secret}, sec)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return fmt.Errorf("read Secret %s: %w", ref.Secret, err)
		default:
			s.remember(sec)
		}
		if _, ok := s.values[ref.String()]; !ok {
			s.missing = append(s.missing, ref)
		}
	}
	return nil
}

// remember keeps every key of sec.
func (s *reconcileState) remember(sec *corev1.Secret) {
	for k, v := range sec.Data {
		s.values[sec.Name+"/"+k] = v
	}
	for k, v := range sec.StringData {
		s.values[sec.Name+"/"+k] = []byte(v)
	}
}

// gatewayHash is the gateway's pod template annotation: its config and the
// secrets it reads.
func (s *reconcileState) gatewayHash(refs []secretRef) string {
	return inputsHash(s.configYAML, refs, s.values)
}

// sandboxHash is a sandbox's pod template annotation: only the secrets it
// reads. A sandbox never reads the gateway's config, so a change there (a
// budget, another orchestrator added) must not restart it and cut short
// the agent runs in flight.
func (s *reconcileState) sandboxHash(refs []secretRef) string {
	return inputsHash("", refs, s.values)
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
