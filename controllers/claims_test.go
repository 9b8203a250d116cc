package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

func findOrch(t *testing.T, gs *garrav1alpha1.GarraServer, name string) garrav1alpha1.OrchestratorSpec {
	t.Helper()
	for _, o := range gs.Spec.Orchestrators {
		if o.Name == name {
			return o
		}
	}
	t.Fatalf("no orchestrator %s", name)
	return garrav1alpha1.OrchestratorSpec{}
}

func TestClaims(t *testing.T) {
	gs := testServer()
	tests := []struct {
		name       string
		ac         *corev1ac.PersistentVolumeClaimApplyConfiguration
		wantName   string
		wantLabels map[string]string
		owned      bool
		size       string
		class      *string
	}{
		{"gateway data", gatewayClaim(gs), "team-a-gateway-data", gatewayLabels(), true, "1Gi", nil},
		{"workspace", workspaceClaim(inlineMember(gs, findOrch(t, gs, "badgood"))), "team-a-ws-badgood", sandboxLabels("badgood"), true, "2Gi", nil},
		{"retained workspace has no owner", workspaceClaim(inlineMember(gs, findOrch(t, gs, "n8n-prod"))), "team-a-ws-n8n-prod", sandboxLabels("n8n-prod"), false, "1Gi", ptrTo("fast")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := typed[corev1.PersistentVolumeClaim](t, tc.ac)
			if c.Name != tc.wantName || c.Namespace != "agents" {
				t.Errorf("name = %s/%s", c.Namespace, c.Name)
			}
			checkOwned(t, c.ObjectMeta, tc.wantLabels, tc.owned)
			if len(c.Spec.AccessModes) != 1 || c.Spec.AccessModes[0] != corev1.ReadWriteOnce {
				t.Errorf("access modes = %v", c.Spec.AccessModes)
			}
			if q := c.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != tc.size {
				t.Errorf("size = %s, want %s", q.String(), tc.size)
			}
			if (c.Spec.StorageClassName == nil) != (tc.class == nil) || (tc.class != nil && *c.Spec.StorageClassName != *tc.class) {
				t.Errorf("storage class = %v, want %v", c.Spec.StorageClassName, tc.class)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestClaimSpecForUpdate(t *testing.T) {
	spec := func(size string) *corev1ac.PersistentVolumeClaimSpecApplyConfiguration {
		return corev1ac.PersistentVolumeClaimSpec().
			WithAccessModes(corev1.ReadWriteOnce).
			WithResources(corev1ac.VolumeResourceRequirements().
				WithRequests(corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}))
	}
	live := func(size string, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}}},
			Status: corev1.PersistentVolumeClaimStatus{Phase: phase},
		}
	}
	tests := []struct {
		name     string
		desired  *corev1ac.PersistentVolumeClaimSpecApplyConfiguration
		applied  *corev1ac.PersistentVolumeClaimSpecApplyConfiguration
		live     *corev1.PersistentVolumeClaim
		wantSize string // "" = nil spec
	}{
		{"unchanged", spec("1Gi"), spec("1Gi"), live("1Gi", corev1.ClaimBound), "1Gi"},
		{"grow a bound claim", spec("5Gi"), spec("1Gi"), live("1Gi", corev1.ClaimBound), "5Gi"},
		{"grow a pending claim: not allowed", spec("5Gi"), spec("1Gi"), live("1Gi", corev1.ClaimPending), "1Gi"},
		{"shrink: not allowed", spec("1Gi"), spec("5Gi"), live("5Gi", corev1.ClaimBound), "5Gi"},
		{"class change only: keep what was applied", spec("1Gi").WithStorageClassName("other"), spec("1Gi"), live("1Gi", corev1.ClaimBound), "1Gi"},
		{"adopted claim whose spec is not ours", spec("1Gi"), nil, live("1Gi", corev1.ClaimBound), ""},
		{"adopted claim, grow", spec("2Gi"), nil, live("1Gi", corev1.ClaimBound), "2Gi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := claimSpecForUpdate(tc.desired, tc.applied, tc.live)
			if tc.wantSize == "" {
				if got != nil {
					t.Errorf("spec = %+v, want nil", got)
				}
				return
			}
			q, ok := requestedStorage(got)
			if !ok || q.String() != tc.wantSize {
				t.Errorf("size = %v (%v), want %s", q.String(), ok, tc.wantSize)
			}
			if got.StorageClassName != nil && (tc.applied == nil || tc.applied.StorageClassName == nil) {
				t.Errorf("storage class changed to %s", *got.StorageClassName)
			}
		})
	}
}
