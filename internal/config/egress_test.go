package config

import (
	"strings"
	"testing"
)

func TestParseWebFetchHost(t *testing.T) {
	good := []string{
		"example.internal", "Example.Internal.", "metrics-exporter", "svc_a.ns.svc.cluster.local",
		"example.internal:8443", "10.0.0.5", "10.0.0.5:80", "127.0.0.1", "::1", "[::1]", "[::1]:8080",
		"fd00::5", "localhost:65535", " padded.example ",
	}
	for _, s := range good {
		if err := ParseWebFetchHost(s); err != nil {
			t.Errorf("ParseWebFetchHost(%q): %v", s, err)
		}
	}
	bad := map[string]string{
		"":                         "empty",
		"   ":                      "empty",
		"http://example.internal":  "not a host",
		"example.internal/metrics": "not a host",
		"user@example.internal":    "not a host",
		"*.example.internal":       "not a host",
		"example.internal:0":       "port",
		"example.internal:65536":   "port",
		"example.internal:http":    "port",
		"example internal":         "not a host",
		"-bad.example":             "not a host",
		"bad-.example":             "not a host",
		"exa..mple":                "not a host",
		"[fe80::1%eth0]:80":        "zone",
		"fe80::1%eth0":             "zone",
		"example.internal:80:90":   "not a host",
		strings.Repeat("a", 64):    "not a host",
	}
	for s, want := range bad {
		err := ParseWebFetchHost(s)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseWebFetchHost(%q) = %v, want an error with %q", s, err, want)
		}
	}
}

func TestCheckWebFetchAllowedHosts(t *testing.T) {
	// ollama needs no key, so the hosts are the only problems.
	cfg, err := Parse([]byte("llm: {provider: ollama}\ngateway: {mcp_http: {web_fetch_allowed_hosts: [ok.internal, 'http://bad/', '10.0.0.1:99999']}}"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.applyDefaults()
	var fields []string
	for _, p := range cfg.Check(func(string) string { return "" }) {
		fields = append(fields, p.Field)
	}
	want := "gateway.mcp_http.web_fetch_allowed_hosts[1]|gateway.mcp_http.web_fetch_allowed_hosts[2]"
	if strings.Join(fields, "|") != want {
		t.Fatalf("problems %v, want %s", fields, want)
	}
}
