package controllers

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestGatewayServiceMonitor(t *testing.T) {
	gs := testServer()
	sm := gatewayServiceMonitor(gs)
	if sm.GroupVersionKind() != ServiceMonitorGVK || sm.GetName() != gatewayName(gs) || sm.GetNamespace() != gs.Namespace {
		t.Fatalf("object = %s %s/%s", sm.GroupVersionKind(), sm.GetNamespace(), sm.GetName())
	}
	if ref := metav1.GetControllerOf(sm); ref == nil || ref.UID != gs.UID || ref.Kind != "GarraServer" {
		t.Errorf("controller = %+v", ref)
	}
	// It selects exactly the gateway Service's labels, in its namespace.
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	svcLabels := gatewayService(gs, inlineMembers(gs)).Labels
	if len(sel) != len(svcLabels) {
		t.Errorf("selector %v, Service labels %v", sel, svcLabels)
	}
	for k, v := range sel {
		if svcLabels[k] != v {
			t.Errorf("selector %s=%s not on the Service", k, v)
		}
	}
	ns, _, _ := unstructured.NestedStringSlice(sm.Object, "spec", "namespaceSelector", "matchNames")
	if len(ns) != 1 || ns[0] != gs.Namespace {
		t.Errorf("namespaceSelector = %v", ns)
	}
	port := *gatewayService(gs, inlineMembers(gs)).Spec.Ports[0].Name
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 || eps[0].(map[string]any)["port"] != port || eps[0].(map[string]any)["path"] != "/metrics" {
		t.Errorf("endpoints = %v, want /metrics on port %s", eps, port)
	}
}

func TestSameServiceMonitor(t *testing.T) {
	gs := testServer()
	desired := gatewayServiceMonitor(gs)
	tests := []struct {
		name   string
		change func(live *unstructured.Unstructured)
		same   bool
	}{
		{"identical", func(*unstructured.Unstructured) {}, true},
		{"a label of someone else's", func(l *unstructured.Unstructured) {
			lb := l.GetLabels()
			lb["team"] = "ops"
			l.SetLabels(lb)
		}, true},
		{"a field the API server defaulted", func(l *unstructured.Unstructured) {
			eps, _, _ := unstructured.NestedSlice(l.Object, "spec", "endpoints")
			eps[0].(map[string]any)["honorLabels"] = false
			_ = unstructured.SetNestedSlice(l.Object, eps, "spec", "endpoints")
		}, true},
		{"our label changed", func(l *unstructured.Unstructured) {
			lb := l.GetLabels()
			lb[LabelComponent] = "other"
			l.SetLabels(lb)
		}, false},
		{"port changed", func(l *unstructured.Unstructured) {
			eps, _, _ := unstructured.NestedSlice(l.Object, "spec", "endpoints")
			eps[0].(map[string]any)["port"] = "http"
			_ = unstructured.SetNestedSlice(l.Object, eps, "spec", "endpoints")
		}, false},
		{"an endpoint added", func(l *unstructured.Unstructured) {
			eps, _, _ := unstructured.NestedSlice(l.Object, "spec", "endpoints")
			_ = unstructured.SetNestedSlice(l.Object, append(eps, map[string]any{"port": "x"}), "spec", "endpoints")
		}, false},
		{"owner removed", func(l *unstructured.Unstructured) { l.SetOwnerReferences(nil) }, false},
		{"spec removed", func(l *unstructured.Unstructured) { delete(l.Object, "spec") }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			live := desired.DeepCopy()
			tc.change(live)
			if got := sameServiceMonitor(live, desired); got != tc.same {
				t.Errorf("same = %v, want %v", got, tc.same)
			}
		})
	}
}

func TestServiceMonitorsServed(t *testing.T) {
	mapper := meta.NewDefaultRESTMapper(nil)
	if ok, err := ServiceMonitorsServed(mapper); ok || err != nil {
		t.Errorf("no such kind: served %v, err %v", ok, err)
	}
	mapper.Add(ServiceMonitorGVK, meta.RESTScopeNamespace)
	if ok, err := ServiceMonitorsServed(mapper); !ok || err != nil {
		t.Errorf("kind known: served %v, err %v", ok, err)
	}
	// Another version of the group only is not v1.
	other := meta.NewDefaultRESTMapper(nil)
	other.Add(schema.GroupVersionKind{Group: ServiceMonitorGVK.Group, Version: "v1alpha1", Kind: "ServiceMonitor"}, meta.RESTScopeNamespace)
	if ok, _ := ServiceMonitorsServed(other); ok {
		t.Error("v1alpha1 only: served")
	}
}
