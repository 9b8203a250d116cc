package main

import (
	"strings"
	"testing"

	"github.com/garraia/garra/internal/config"
)

// The --watch-* flags: none is no watch; a partial set, or a watch
// without a config file, is refused naming what is missing.
func TestPolicyWatchFlags(t *testing.T) {
	all := policyWatchFlags{namespace: "ns", configMap: "g", secret: "g-tokens", secretDir: "/var/run/garra/tokens"}
	for _, tc := range []struct {
		name    string
		f       policyWatchFlags
		path    string
		wantErr string // "" = no watch, no error
	}{
		{"none", policyWatchFlags{}, "/etc/garra/config.yml", ""},
		{"no namespace", policyWatchFlags{configMap: "g", secret: "g-tokens", secretDir: "/d"}, "/etc/garra/config.yml", "--watch-namespace is empty"},
		{"no secret dir", policyWatchFlags{namespace: "ns", configMap: "g", secret: "g-tokens"}, "/etc/garra/config.yml", "--watch-secret-dir is empty"},
		{"no config file", all, "", "needs --config"},
		{"no API server", all, "/etc/garra/config.yml", "policy watch: API server config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("KUBERNETES_SERVICE_HOST", "")
			t.Setenv("KUBERNETES_SERVICE_PORT", "")
			pw, err := tc.f.policyWatch(config.Default(), tc.path)
			if tc.wantErr == "" {
				if err != nil || pw != nil {
					t.Fatalf("got %v, %v; want no watch", pw, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one with %q", err, tc.wantErr)
			}
		})
	}
}
