package controllers

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/config"
)

// listMembers gathers the orchestrators: the inline entries, then the
// accepted Orchestrators (an Orchestrator that is not accepted, or whose
// settings are unusable, is left out here and says why in its own status;
// it never makes the server invalid).
func (r *GarraServerReconciler) listMembers(ctx context.Context, s *reconcileState) error {
	attached, err := r.attachedMembers(ctx, s)
	if err != nil {
		return err
	}
	s.members = append(inlineMembers(s.gs), attached...)
	return nil
}

// validate finds what only the user can fix and the schema cannot see: an
// image nobody named (the manager may run without defaults), names that
// would not make valid child names (the schema's CEL rules say so too, but
// a CRD installed without them must not lead to half-applied objects), and
// a config that does not render. It renders config.yml on the way.
func (r *GarraServerReconciler) validate(_ context.Context, s *reconcileState) error {
	if msg := invalidSpec(s.gs, r.GarraImage, r.SandboxImage); msg != "" {
		s.invalid = msg
		return nil
	}
	yml, err := RenderConfigYAML(s.gs, s.members)
	if err != nil {
		s.invalid = err.Error()
		return nil
	}
	s.configYAML = yml
	return nil
}

// invalidSpec is the first permanent problem of gs, or "".
func invalidSpec(gs *garrav1alpha1.GarraServer, defGarra, defSandbox string) string {
	checks := []func() string{
		func() string {
			if gs.Spec.Image == "" && defGarra == "" {
				return "spec.image is empty and the manager has no --garra-image: set spec.image"
			}
			return ""
		},
		func() string {
			return dnsLabelProblem("metadata.name", gatewayName(gs))
		},
		func() string { return telemetryProblem(gs) },
		func() string {
			if gs.Spec.Gateway.Storage.Size.Sign() <= 0 {
				return "spec.gateway.storage.size must be positive"
			}
			return ""
		},
		func() string { return resourcesProblem("spec.gateway.resources", gs.Spec.Gateway.Resources) },
		func() string { return sharedTokenProblem(gs, nil) },
	}
	for _, c := range checks {
		if msg := c(); msg != "" {
			return msg
		}
	}
	for _, m := range inlineMembers(gs) {
		if msg := memberProblem(m, defSandbox); msg != "" {
			return msg
		}
	}
	return ""
}

// memberProblem is the first problem of one orchestrator's settings that
// only its author can fix, or "": the same checks for an inline entry
// (which makes the whole GarraServer invalid) and for an Orchestrator
// object (which is then not attached, and says why in its own status).
func memberProblem(m member, defSandbox string) string {
	if m.Workspace.Size.Sign() <= 0 {
		return m.Field + ".workspace.size must be positive"
	}
	// The CRDs' CEL rules say the same; this holds without them.
	if config.OrchestratorNameReserved(m.ID) {
		return fmt.Sprintf("%s: %q is reserved by the gateway: choose another name", m.nameField(), m.ID)
	}
	if p := dnsLabelProblem(m.nameField(), m.sandboxName()); p != "" {
		return p
	}
	if sandboxImage(m.gs, m, defSandbox) == "" {
		return m.Field + ".sandbox.image, the GarraServer's spec.sandboxImage and the manager's --sandbox-image are all empty: set one"
	}
	if p := egressProblem(m); p != "" {
		return p
	}
	return sandboxPodProblem(m.Field+".sandbox", m.Sandbox)
}

func dnsLabelProblem(field, child string) string {
	if errs := validation.IsDNS1035Label(child); len(errs) > 0 {
		return fmt.Sprintf("%s: the child name %q is not a valid Service name: %s", field, child, strings.Join(errs, "; "))
	}
	return ""
}

// gatewayImage resolves the gateway's image.
func gatewayImage(gs *garrav1alpha1.GarraServer, def string) string {
	if gs.Spec.Image != "" {
		return gs.Spec.Image
	}
	return def
}
