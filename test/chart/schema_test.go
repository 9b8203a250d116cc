package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestSchemaRejectsBadValues: Helm refuses, before rendering anything, a
// value of the wrong type or outside its enum and a key the chart does not
// know, at any depth, and its message names the key.
func TestSchemaRejectsBadValues(t *testing.T) {
	tests := []struct {
		name, values string
		// want are substrings of the error: the key's path and why.
		want []string
	}{
		{"port as a string", `metrics: {port: "8080"}`, []string{"/metrics/port", "got string, want integer"}},
		{"replicas not a number", `replicaCount: two`, []string{"/replicaCount", "want integer"}},
		{"negative replicas", `replicaCount: -1`, []string{"/replicaCount", "minimum"}},
		{"boolean as a string", `rbac: {create: "yes"}`, []string{"/rbac/create", "want boolean"}},
		{"pull policy outside the enum", `image: {pullPolicy: Sometimes}`, []string{"/image/pullPolicy", "must be one of"}},
		{"args as a string", `extraArgs: --zap-devel`, []string{"/extraArgs", "want array"}},
		{"log level unknown", `logLevel: loud`, []string{"/logLevel"}},
		{"port out of range", `healthPort: 70000`, []string{"/healthPort", "maximum"}},
		{"bad quantity", `resources: {requests: {memory: lots}}`, []string{"/resources/requests/memory"}},
		{"bad scrape interval", `metrics: {serviceMonitor: {interval: soon}}`, []string{"/metrics/serviceMonitor/interval"}},
		{"label value not a string", `podLabels: {tier: 1}`, []string{"/podLabels/tier", "want string"}},
		{"rbac scope outside the enum", `rbac: {scope: namespaced}`, []string{"/rbac/scope", "must be one of"}},
		{"watch namespaces as a string", `watchNamespaces: team-a`, []string{"/watchNamespaces", "want array"}},
		{"watch namespace not a name", `watchNamespaces: [Team_A]`, []string{"/watchNamespaces/0"}},
		{"watch namespace twice", `watchNamespaces: [a, a]`, []string{"/watchNamespaces", "are equal"}},
		{"unknown top-level key", `replicas: 2`, []string{"additional properties", "'replicas'"}},
		{"unknown nested key", `metrics: {serviceMonitor: {intervall: 30s}}`, []string{"/metrics/serviceMonitor", "'intervall'"}},
		{"unknown security field", `securityContext: {privilegd: false}`, []string{"/securityContext", "'privilegd'"}},
		{"unknown pull secret field", `imagePullSecrets: [{nam: regcred}]`, []string{"/imagePullSecrets/0", "'nam'"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := renderRaw(t, tc.values)
			if err == nil {
				t.Fatalf("%s rendered", tc.values)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestSchemaAcceptsValidValues: values of every shape the README shows pass
// the schema (the defaults are TestDefaultValues', the custom ones
// TestCustomValues').
func TestSchemaAcceptsValidValues(t *testing.T) {
	for _, v := range []string{
		`logLevel: debug`,
		`logLevel: 5`,
		`logLevel: "3"`,
		`resources: {requests: {cpu: 0.5, memory: 1Gi}, limits: {cpu: "2"}}`,
		`metrics: {serviceMonitor: {enabled: true, interval: 1m30s, scrapeTimeout: 10s}}`,
		`tolerations: [{key: dedicated, operator: Equal, value: ops, effect: NoSchedule}]`,
		`affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]}}}`,
		`imagePullSecrets: [{name: regcred}]`,
	} {
		if _, err := renderRaw(t, v); err != nil {
			t.Errorf("%s: %v", v, err)
		}
	}
}

// TestSchemaCoversEveryValue: every key of values.yaml, at every depth, is
// a property of the schema, and every object the schema declares refuses
// unknown keys (additionalProperties false, or typed for free-form maps).
func TestSchemaCoversEveryValue(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(chartDir, "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatalf("values.schema.json: %v", err)
	}
	defs, _ := schema["definitions"].(map[string]any)
	resolve := func(s map[string]any) map[string]any {
		if ref, ok := s["$ref"].(string); ok {
			d, _ := defs[strings.TrimPrefix(ref, "#/definitions/")].(map[string]any)
			if d == nil {
				t.Fatalf("unresolved $ref %s", ref)
			}
			return d
		}
		return s
	}

	data, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		t.Fatal(err)
	}
	var walk func(path string, v any, s map[string]any)
	walk = func(path string, v any, s map[string]any) {
		s = resolve(s)
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		props, _ := s["properties"].(map[string]any)
		if ap, ok := s["additionalProperties"]; !ok || ap == true {
			t.Errorf("%q: the schema accepts any key (additionalProperties %v)", path, ap)
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p, ok := props[k].(map[string]any)
			if !ok {
				if ap, typed := s["additionalProperties"].(map[string]any); typed {
					walk(path+"."+k, m[k], ap)
					continue
				}
				t.Errorf("%s.%s is in values.yaml but not in values.schema.json", path, k)
				continue
			}
			walk(path+"."+k, m[k], p)
		}
	}
	walk("", values, schema)
}
