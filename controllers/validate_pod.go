package controllers

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
	"github.com/garraia/garra/internal/toolchain"
)

// The pod settings the spec passes through to Kubernetes (resources,
// runtimeClassName, nodeSelector, tolerations) are checked here, before
// anything is applied, so that a bad one is an InvalidSpec naming the
// field rather than a Deployment the API server refuses on every
// reconcile. The CRD checks what a schema can cheaply check; a CEL rule
// over quantities or over every toleration of 32 orchestrators would
// exceed the CRD's cost budget, so those checks live here.

// sandboxPodProblem is the first problem of a sandbox's pod settings
// (field is their path), or "".
func sandboxPodProblem(field string, sb garrav1alpha1.SandboxSpec) string {
	if p := resourcesProblem(field+".resources", sb.Resources); p != "" {
		return p
	}
	if err := toolchain.CheckRequired(sb.RequiredTools); err != nil {
		return field + ".requiredTools: " + err.Error()
	}
	if sb.RuntimeClassName != nil {
		if errs := validation.IsDNS1123Subdomain(*sb.RuntimeClassName); len(errs) > 0 {
			return fmt.Sprintf("%s.runtimeClassName: %q must be a DNS-1123 subdomain, the name of a RuntimeClass: %s",
				field, *sb.RuntimeClassName, strings.Join(errs, "; "))
		}
	}
	for _, k := range sortedKeys(sb.NodeSelector) {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Sprintf("%s.nodeSelector: key %q is not a label key: %s", field, k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(sb.NodeSelector[k]); len(errs) > 0 {
			return fmt.Sprintf("%s.nodeSelector[%s]: %q is not a label value: %s", field, k, sb.NodeSelector[k], strings.Join(errs, "; "))
		}
	}
	for i, t := range sb.Tolerations {
		if p := tolerationProblem(fmt.Sprintf("%s.tolerations[%d]", field, i), t); p != "" {
			return p
		}
	}
	return ""
}

// resourcesProblem refuses a negative quantity and a request above its
// limit, which Kubernetes would refuse in the pod template.
func resourcesProblem(field string, r corev1.ResourceRequirements) string {
	for _, part := range []struct {
		name string
		list corev1.ResourceList
	}{{"limits", r.Limits}, {"requests", r.Requests}} {
		for _, name := range sortedKeys(part.list) {
			if q := part.list[name]; q.Sign() < 0 {
				return fmt.Sprintf("%s.%s.%s: %s must not be negative", field, part.name, name, q.String())
			}
		}
	}
	for _, name := range sortedKeys(r.Requests) {
		req := r.Requests[name]
		if lim, ok := r.Limits[name]; ok && req.Cmp(lim) > 0 {
			return fmt.Sprintf("%s.requests.%s: %s is more than its limit %s: a request must not exceed the limit",
				field, name, req.String(), lim.String())
		}
	}
	return ""
}

var tolerationEffects = []corev1.TaintEffect{"", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute}

// tolerationProblem checks one toleration as the API server checks a
// pod's: a key that is a label key (empty only with Exists, which then
// tolerates every taint), Exists with no value, Equal with a label value,
// a known effect, and tolerationSeconds only for NoExecute.
func tolerationProblem(field string, t corev1.Toleration) string {
	switch t.Operator {
	case corev1.TolerationOpExists:
		if t.Value != "" {
			return fmt.Sprintf("%s.value: must be empty when operator is Exists", field)
		}
	case "", corev1.TolerationOpEqual:
		if t.Key == "" {
			return fmt.Sprintf("%s.key: an empty key needs operator Exists (it tolerates every taint)", field)
		}
		if errs := validation.IsValidLabelValue(t.Value); len(errs) > 0 {
			return fmt.Sprintf("%s.value: %q is not a label value: %s", field, t.Value, strings.Join(errs, "; "))
		}
	default:
		return fmt.Sprintf("%s.operator: %q is not Exists or Equal", field, t.Operator)
	}
	if t.Key != "" {
		if errs := validation.IsQualifiedName(t.Key); len(errs) > 0 {
			return fmt.Sprintf("%s.key: %q is not a label key: %s", field, t.Key, strings.Join(errs, "; "))
		}
	}
	if !slices.Contains(tolerationEffects, t.Effect) {
		return fmt.Sprintf("%s.effect: %q is not NoSchedule, PreferNoSchedule or NoExecute", field, t.Effect)
	}
	if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
		return fmt.Sprintf("%s.tolerationSeconds: only a NoExecute toleration has one (effect is %q)", field, t.Effect)
	}
	return ""
}
