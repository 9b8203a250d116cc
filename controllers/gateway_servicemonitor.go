package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	garrav1alpha1 "github.com/garraia/garra/api/v1alpha1"
)

// ServiceMonitorGVK is the Prometheus Operator's ServiceMonitor. The
// project has no Go types for it: the object is built unstructured, so the
// operator neither imports nor requires the Prometheus Operator.
var ServiceMonitorGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}

// ServiceMonitorsServed reports whether the API server serves
// ServiceMonitors (the Prometheus Operator's CRD is installed). Any other
// error than "no such kind" is returned: the manager should not guess.
func ServiceMonitorsServed(mapper meta.RESTMapper) (bool, error) {
	_, err := mapper.RESTMapping(ServiceMonitorGVK.GroupKind(), ServiceMonitorGVK.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	}
	return false, fmt.Errorf("look up %s: %w", ServiceMonitorGVK, err)
}

// newServiceMonitor is an empty ServiceMonitor object (to Get into, or to
// watch).
func newServiceMonitor() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(ServiceMonitorGVK)
	return u
}

// gatewayServiceMonitor is NAME-gateway: Prometheus scrapes GET /metrics
// on the mcp port of the gateway Service (the gateway serves its metrics
// there, unauthenticated), selected by the Service's own labels.
func gatewayServiceMonitor(gs *garrav1alpha1.GarraServer) *unstructured.Unstructured {
	lbl := labels(gs, ComponentGateway, "")
	sel := map[string]any{}
	for k, v := range lbl {
		sel[k] = v
	}
	u := newServiceMonitor()
	u.SetName(gatewayName(gs))
	u.SetNamespace(gs.Namespace)
	u.SetLabels(lbl)
	u.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(gs, serverKind)})
	u.Object["spec"] = map[string]any{
		"selector":          map[string]any{"matchLabels": sel},
		"namespaceSelector": map[string]any{"matchNames": []any{gs.Namespace}},
		"endpoints": []any{map[string]any{
			"port":   PortName,
			"path":   "/metrics",
			"scheme": "http",
		}},
	}
	return u
}

// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=servicemonitors,verbs=get;list;watch;create;patch;delete

// applyServiceMonitor applies the gateway's ServiceMonitor when the
// manager found the CRD at start. Like applyIfChanged it sends nothing
// when the live object already has our labels, owner and spec: there is
// no generated Extract for an unstructured kind, and the operator owns the
// whole spec, so comparing those is comparing what it owns.
func (r *GarraServerReconciler) applyServiceMonitor(ctx context.Context, s *reconcileState) error {
	if !r.ServiceMonitors {
		return nil
	}
	desired := gatewayServiceMonitor(s.gs)
	live := newServiceMonitor()
	err := r.Get(ctx, client.ObjectKeyFromObject(desired), live)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return fmt.Errorf("get ServiceMonitor %s: %w", desired.GetName(), err)
	case sameServiceMonitor(live, desired):
		return nil
	}
	if err := r.Apply(ctx, client.ApplyConfigurationFromUnstructured(desired), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("apply ServiceMonitor %s: %w", desired.GetName(), err)
	}
	return nil
}

// sameServiceMonitor: live carries desired's labels (others may add
// theirs), owner references and spec (fields the API server defaulted
// besides ours do not count).
func sameServiceMonitor(live, desired *unstructured.Unstructured) bool {
	got := live.GetLabels()
	for k, v := range desired.GetLabels() {
		if got[k] != v {
			return false
		}
	}
	return equality.Semantic.DeepEqual(live.GetOwnerReferences(), desired.GetOwnerReferences()) &&
		covers(live.Object["spec"], desired.Object["spec"])
}

// covers reports whether got holds every value of want: maps may have
// more keys, lists must match element by element.
func covers(got, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !covers(g[k], v) {
				return false
			}
		}
		return true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return false
		}
		for i := range w {
			if !covers(g[i], w[i]) {
				return false
			}
		}
		return true
	}
	return equality.Semantic.DeepEqual(got, want)
}
