package otelenv

import (
	"strings"
	"testing"
)

func TestCheckSampler(t *testing.T) {
	for _, tt := range []struct {
		name, arg string
		want      string
		ratio     float64
		err       string
	}{
		{"", "", DefaultSampler, 1, ""},
		{"always_off", "", "always_off", 1, ""},
		{"always_on", "not a number", "always_on", 1, ""}, // only the ratio samplers read the argument
		{"traceidratio", "0.25", "traceidratio", 0.25, ""},
		{"parentbased_traceidratio", " 1 ", "parentbased_traceidratio", 1, ""},
		{"traceidratio", "-0.1", "", 0, SamplerArg},
		{"parentbased_traceidratio", "half", "", 0, SamplerArg},
		{"jaeger_remote", "", "", 0, Sampler + ":"},
	} {
		got, ratio, err := CheckSampler(tt.name, tt.arg)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q %q: error %v, want one naming %s", tt.name, tt.arg, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want || ratio != tt.ratio {
			t.Errorf("%q %q = %q %v %v", tt.name, tt.arg, got, ratio, err)
		}
	}
}
