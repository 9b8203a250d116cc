package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

func TestSameApply(t *testing.T) {
	base := func() *corev1ac.ConfigMapApplyConfiguration {
		return corev1ac.ConfigMap("a", "ns").WithLabels(map[string]string{"x": "1"}).WithData(map[string]string{"k": "v"})
	}
	res := func(q string) *corev1ac.ResourceRequirementsApplyConfiguration {
		return corev1ac.ResourceRequirements().WithLimits(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)})
	}
	tests := []struct {
		name string
		a, b any
		want bool
	}{
		{"identical", base(), base(), true},
		{"data differs", base(), base().WithData(map[string]string{"k": "w"}), false},
		{"extra label", base(), base().WithLabels(map[string]string{"y": "2"}), false},
		{"empty annotations are no value", base(), base().WithAnnotations(map[string]string{}), true},
		{"quantities compare canonically", res("0.5"), res("500m"), true},
		{"quantities differ", res("1"), res("500m"), false},
		{"emptyDir{} on both sides", corev1ac.Volume().WithName("tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
			corev1ac.Volume().WithName("tmp").WithEmptyDir(corev1ac.EmptyDirVolumeSource()), true},
		{"false is a value", corev1ac.Container().WithStdin(false), corev1ac.Container(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sameApply(tc.a, tc.b)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("sameApply = %v, want %v", got, tc.want)
			}
		})
	}
}
