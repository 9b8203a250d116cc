package controllers

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/config"
)

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
	yml, err := RenderConfigYAML(s.gs)
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
			for _, o := range gs.Spec.Orchestrators {
				if o.Workspace.Size.Sign() <= 0 {
					return fmt.Sprintf("spec.orchestrators[%s].workspace.size must be positive", o.Name)
				}
			}
			return ""
		},
		func() string {
			for _, o := range gs.Spec.Orchestrators {
				if p := reservedNameProblem(o.Name); p != "" {
					return p
				}
				if p := dnsLabelProblem("spec.orchestrators["+o.Name+"].name", sandboxName(gs, o.Name)); p != "" {
					return p
				}
				if sandboxImage(gs, o, defSandbox) == "" {
					return fmt.Sprintf("spec.orchestrators[%s].sandbox.image, spec.sandboxImage and the manager's --sandbox-image are all empty: set one", o.Name)
				}
			}
			return ""
		},
		func() string { return podSettingsProblem(gs) },
		func() string { return sharedTokenProblem(gs, nil) },
	}
	for _, c := range checks {
		if msg := c(); msg != "" {
			return msg
		}
	}
	return ""
}

// reservedNameProblem refuses an orchestrator name the gateway keeps for
// itself (the CRD's CEL rule says the same; this holds without it).
func reservedNameProblem(name string) string {
	if config.OrchestratorNameReserved(name) {
		return fmt.Sprintf("spec.orchestrators[%s].name: %q is reserved by the gateway: choose another name", name, name)
	}
	return ""
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
