package controllers

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// gatewayClaim is NAME-gateway-data, the gateway's data_dir.
func gatewayClaim(gs *garrav1alpha1.GarraServer) *corev1ac.PersistentVolumeClaimApplyConfiguration {
	return claim(gatewayDataName(gs), serverPlacement(gs), labels(gs, ComponentGateway, ""), gs.Spec.Gateway.Storage, true)
}

// claim is a ReadWriteOnce claim of st in at's namespace; owned makes at's
// owner its controller.
func claim(name string, at placement, lbl map[string]string, st garrav1alpha1.StorageSpec, owned bool) *corev1ac.PersistentVolumeClaimApplyConfiguration {
	spec := corev1ac.PersistentVolumeClaimSpec().
		WithAccessModes(corev1.ReadWriteOnce).
		WithResources(corev1ac.VolumeResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceStorage: st.Size}))
	if st.StorageClassName != "" {
		spec.WithStorageClassName(st.StorageClassName)
	}
	ac := corev1ac.PersistentVolumeClaim(name, at.Namespace).
		WithLabels(lbl).
		WithSpec(spec)
	if owned {
		ac.WithOwnerReferences(at.ownerRefs()...)
	}
	return ac
}

// claimSpecForUpdate is the spec to apply to a claim that already exists.
// A claim's spec is immutable except for growing the storage request of a
// bound claim, so it is what this manager applied before (applied, nil if
// it never owned the spec), with the request raised to desired's when that
// is larger and the claim is bound. Anything else (shrinking, another
// class) is not applied.
func claimSpecForUpdate(desired, applied *corev1ac.PersistentVolumeClaimSpecApplyConfiguration, live *corev1.PersistentVolumeClaim) *corev1ac.PersistentVolumeClaimSpecApplyConfiguration {
	want, ok := requestedStorage(desired)
	if !ok || live.Status.Phase != corev1.ClaimBound {
		return applied
	}
	have := live.Spec.Resources.Requests[corev1.ResourceStorage]
	if want.Cmp(have) <= 0 {
		return applied
	}
	out := corev1ac.PersistentVolumeClaimSpec()
	if applied != nil {
		c := *applied
		out = &c
	}
	out.WithResources(corev1ac.VolumeResourceRequirements().
		WithRequests(corev1.ResourceList{corev1.ResourceStorage: want}))
	return out
}

func requestedStorage(s *corev1ac.PersistentVolumeClaimSpecApplyConfiguration) (q resource.Quantity, ok bool) {
	if s == nil || s.Resources == nil || s.Resources.Requests == nil {
		return q, false
	}
	q, ok = (*s.Resources.Requests)[corev1.ResourceStorage]
	return q, ok
}
