package mcpstdio

import (
	"strings"
	"testing"
)

func TestPolicyFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		want    Policy
		wantErr string
	}{
		{"unset", nil, Policy{}, ""},
		{"allowlist trimmed", map[string]string{EnvModelAllowlist: " a/b , ,c "}, Policy{ModelAllowlist: []string{"a/b", "c"}}, ""},
		{"cap", map[string]string{EnvMaxTimeoutSecs: "30"}, Policy{MaxTimeoutSecs: 30}, ""},
		{"bad cap", map[string]string{EnvMaxTimeoutSecs: "30s"}, Policy{}, EnvMaxTimeoutSecs},
		{"zero cap", map[string]string{EnvMaxTimeoutSecs: "0"}, Policy{}, EnvMaxTimeoutSecs},
		{"tools YES", map[string]string{EnvEnableTools: "YES"}, Policy{EnableTools: true}, ""},
		{"tools True", map[string]string{EnvEnableTools: "True"}, Policy{EnableTools: true}, ""},
		{"tools 1", map[string]string{EnvEnableTools: "1"}, Policy{EnableTools: true}, ""},
		{"tools on is not truthy", map[string]string{EnvEnableTools: "on"}, Policy{}, ""},
		{"tools 0", map[string]string{EnvEnableTools: "0"}, Policy{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PolicyFromEnv(func(k string) string { return tt.env[k] })
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got.String() != tt.want.String() {
				t.Fatalf("got %v (%v), want %v", got, err, tt.want)
			}
		})
	}
}

func TestEffectiveTimeout(t *testing.T) {
	tests := []struct {
		name      string
		cap       int
		requested int
		given     bool
		min, def  int
		max       int
		want      int
		wantErr   string
	}{
		{"omitted, no cap", 0, 0, false, 1, 60, 600, 60, ""},
		{"omitted, cap below default", 30, 0, false, 1, 60, 600, 30, ""},
		{"omitted, cap above default", 120, 0, false, 1, 60, 600, 60, ""},
		{"agent omitted, cap 100", 100, 0, false, 5, 300, 1800, 100, ""},
		{"explicit within", 0, 600, true, 1, 60, 600, 600, ""},
		{"explicit above schema", 0, 601, true, 1, 60, 600, 0, "[1, 600]"},
		{"explicit zero", 0, 0, true, 1, 60, 600, 0, "[1, 600]"},
		{"explicit above cap", 30, 31, true, 1, 60, 600, 0, "operator cap of 30"},
		{"cap above schema clamps", 5000, 1800, true, 5, 300, 1800, 1800, ""},
		{"explicit equals cap", 30, 30, true, 1, 60, 600, 30, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Policy{MaxTimeoutSecs: tt.cap}
			got, err := p.EffectiveTimeout(tt.requested, tt.min, tt.def, tt.max, tt.given)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "timeout_secs") {
					t.Fatalf("err = %v, want %q naming timeout_secs", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %d, %v; want %d", got, err, tt.want)
			}
		})
	}
}

func TestModelAllowed(t *testing.T) {
	p := Policy{ModelAllowlist: []string{"z-ai/glm-5.3-flash"}}
	if !p.ModelAllowed("z-ai/glm-5.3-flash") || p.ModelAllowed("openrouter/auto") {
		t.Fatal("allowlist not enforced")
	}
	if !(Policy{}).ModelAllowed("anything") {
		t.Fatal("empty allowlist must allow any model")
	}
}
