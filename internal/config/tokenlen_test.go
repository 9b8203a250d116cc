package config

import (
	"strings"
	"testing"
)

// An owner key or orchestrator token shorter than MinTokenBytes is a
// problem of the field that holds it, wherever it comes from; the message
// never holds the value.
func TestCheckRefusesShortTokens(t *testing.T) {
	dir := t.TempDir()
	const short = "short-token-31-bytes-0123456789"
	shortFile := writeSecret(t, dir, "short", short+"\n")
	rotating := writeSecret(t, dir, "rotating", longToken+"\n"+short+"\n")
	longFile := writeSecret(t, dir, "long", longToken+"\n")
	for _, tt := range []struct {
		name, yaml string
		env        map[string]string
		field      string
	}{
		{"owner key inline", "gateway: {api_key: " + short + "}", nil, "gateway.api_key"},
		{"owner key from the env", "gateway: {api_key_file: " + longFile + "}", map[string]string{EnvGatewayAPIKey: short}, "gateway.api_key"},
		{"owner key file", "gateway: {api_key_file: " + shortFile + "}", nil, "gateway.api_key_file"},
		{"orchestrator key_env", "gateway: {api_key: " + longToken + ", mcp_http: {orchestrators: [{name: a, key_env: K}]}}", map[string]string{"K": short}, "gateway.mcp_http.orchestrators[a].key_env"},
		{"orchestrator key_file, second line", "gateway: {api_key: " + longToken + ", mcp_http: {orchestrators: [{name: a, key_file: " + rotating + "}]}}", nil, "gateway.mcp_http.orchestrators[a].key_file"},
		{"long enough", "gateway: {api_key: " + longToken + ", mcp_http: {orchestrators: [{name: a, key_file: " + longFile + "}]}}", nil, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			cfg.applyDefaults()
			getenv := func(k string) string { return tt.env[k] }
			cfg.applyEnv(getenv)
			var got []Problem
			for _, p := range cfg.Check(getenv) {
				if strings.Contains(p.Message, "fewer than 32") {
					got = append(got, p)
				}
			}
			if tt.field == "" {
				if len(got) != 0 {
					t.Fatalf("problems %v, want none", got)
				}
				return
			}
			if len(got) != 1 || got[0].Field != tt.field || got[0].Warning || got[0].FailsClosed || strings.Contains(got[0].String(), short) {
				t.Fatalf("problems %v, want one refusal of %s that does not hold the token", got, tt.field)
			}
		})
	}
}
