package controllers

import (
	"bytes"
	"context"
	"fmt"
	"slices"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// sharedTokenProblem names the first orchestrator whose bearer token would
// also prove another caller, or "". The gateway and `garra config check`
// refuse such a config: a token equal to the owner key would make the owner
// that orchestrator (losing /sandboxz, and with it Verified), and a token
// of two orchestrators would prove only one of them. With values nil it
// compares where the tokens come from (the spec alone); with the Secrets'
// values it compares the tokens, never putting one in the message. It
// looks at the inline entries: an attached Orchestrator's token lives in
// its own namespace, where the owner key's Secret cannot be named.
func sharedTokenProblem(gs *garrav1alpha1.GarraServer, values map[string][]byte) string {
	token := func(ref secretRef) []byte {
		if values == nil {
			return nil
		}
		return bytes.TrimSpace(values[ref.String()])
	}
	same := func(a, b secretRef) bool {
		if a.Secret == b.Secret && a.Key == b.Key {
			return true
		}
		if a.Field == "generated" && b.Field == "generated" {
			return false // fresh random credentials: equal only under a test's fixed reader
		}
		ta, tb := token(a), token(b)
		return len(ta) > 0 && bytes.Equal(ta, tb)
	}
	owner := gatewayAPIKeyRef(gs)
	var earlier []member
	for _, o := range inlineMembers(gs) {
		if !usesToken(o.OrchestratorSettings) {
			continue
		}
		ref := orchTokenRef(o)
		field := o.Field + ".tokenSecretRef"
		if same(ref, owner) {
			return fmt.Sprintf("%s: %s holds the gateway's owner key (%s %s): give the orchestrator a token of its own", field, ref, owner.Field, owner)
		}
		for _, e := range earlier {
			if other := orchTokenRef(e); same(ref, other) {
				return fmt.Sprintf("%s: %s holds the same token as orchestrator %s (%s): give each orchestrator a token of its own", field, ref, e.Name, other)
			}
		}
		earlier = append(earlier, o)
	}
	return ""
}

// validateTokens is sharedTokenProblem on the values read from the
// Secrets: a spec whose references differ may still name equal tokens.
// An attached Orchestrator whose token another caller already has is
// refused instead (tokenClash): one team's Secret must not make the
// gateway refuse everyone's config.
func (r *GarraServerReconciler) validateTokens(_ context.Context, s *reconcileState) error {
	if msg := sharedTokenProblem(s.gs, s.values); msg != "" {
		s.invalid = msg
		return nil
	}
	// Attached ones are checked in the order they attached, as clashOf.
	var attached []member
	for _, m := range s.members {
		if m.attached {
			attached = append(attached, m)
		}
	}
	slices.SortStableFunc(attached, func(a, b member) int { return a.ob.CreationTimestamp.Compare(b.ob.CreationTimestamp.Time) })
	p := newPlacedTokens(s.gs, s.values)
	for _, m := range inlineMembers(s.gs) {
		p.add(m)
	}
	drop := map[string]bool{}
	for _, m := range attached {
		if why := p.clash(m); why != "" {
			s.refuse(m, garrav1alpha1.ReasonTokenClash, why)
			drop[m.ID] = true
			continue
		}
		p.add(m)
	}
	if len(drop) == 0 {
		return nil
	}
	s.members = slices.DeleteFunc(s.members, func(m member) bool { return drop[m.ID] })
	// The config was rendered with them; the gateway must not know them.
	yml, err := RenderConfigYAML(s.gs, s.members)
	if err != nil {
		s.invalid = err.Error()
		return nil
	}
	s.configYAML = yml
	return nil
}
