package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// TestServiceMonitorOnlyWhenEnabled: the manager's ServiceMonitor exists
// only when asked for, and never without the metrics it would scrape.
func TestServiceMonitorOnlyWhenEnabled(t *testing.T) {
	for _, tc := range []struct {
		values string
		want   int
	}{
		{"", 0},
		{"metrics: {serviceMonitor: {enabled: false}}", 0},
		{"metrics: {serviceMonitor: {enabled: true}}", 1},
		{"metrics: {enabled: false, serviceMonitor: {enabled: true}}", 0},
	} {
		if got := len(render(t, tc.values).ofKind("ServiceMonitor")); got != tc.want {
			t.Errorf("%q: %d ServiceMonitors, want %d", tc.values, got, tc.want)
		}
	}
}

// TestGrafanaDashboard: off by default; when enabled, one ConfigMap with
// the sidecar's label whose JSON is the dashboard file, unchanged.
func TestGrafanaDashboard(t *testing.T) {
	if n := len(render(t, "").ofKind("ConfigMap")); n != 0 {
		t.Errorf("default values render %d ConfigMaps", n)
	}
	r := render(t, "grafanaDashboard: {enabled: true, namespace: monitoring, annotations: {grafana_folder: Garra}}")
	cm := one[*corev1.ConfigMap](t, r, "ConfigMap")
	if cm.Namespace != "monitoring" {
		t.Errorf("namespace %q, want monitoring", cm.Namespace)
	}
	if cm.Labels["grafana_dashboard"] != "1" || cm.Annotations["grafana_folder"] != "Garra" {
		t.Errorf("labels %v annotations %v", cm.Labels, cm.Annotations)
	}
	raw, err := os.ReadFile(filepath.Join(chartDir, "dashboards", "garra-gateway.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(cm.Data["garra-gateway.json"]), &got); err != nil {
		t.Fatalf("rendered dashboard is not JSON: %v", err)
	}
	if string(mustJSON(t, got)) != string(mustJSON(t, want)) {
		t.Error("the rendered dashboard differs from dashboards/garra-gateway.json")
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGatewayServiceMonitorsFlag: the operator's per-gateway
// ServiceMonitors are on by default (no flag: the manager's default) and
// turned off by the value.
func TestGatewayServiceMonitorsFlag(t *testing.T) {
	const off = "--gateway-service-monitors=false"
	if args := managerContainer(t, one[*appsv1.Deployment](t, render(t, ""), "Deployment")).Args; slices.Contains(args, off) {
		t.Errorf("default args %q contain %s", args, off)
	}
	r := render(t, "metrics: {gatewayServiceMonitors: false}")
	if args := managerContainer(t, one[*appsv1.Deployment](t, r, "Deployment")).Args; !slices.Contains(args, off) {
		t.Errorf("args %q lack %s", args, off)
	}
}
