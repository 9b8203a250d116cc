package config

import (
	"slices"
	"testing"
)

// Every credential file the config names, its data directory and its audit
// file are private; an orchestrator with a sandbox pod or without agent
// has no local workspace.
func TestPrivatePathsAndLocalWorkspaces(t *testing.T) {
	c := Default()
	c.DataDir = "/srv/garra"
	c.Audit.Path = "/var/log/garra/audit.jsonl"
	c.Gateway.APIKeyFile = "/etc/garra/owner.key"
	c.Store.DSNFile = "/etc/garra/dsn"
	c.Gateway.MCPHTTP.Orchestrators = []Orchestrator{
		{Name: "a", KeyFile: "/etc/garra/a.token", Tools: []string{"agent"}},
		{Name: "b", Tools: []string{"agent"}, Sandbox: &OrchestratorSandbox{URL: "http://b", TokenFile: "/etc/garra/b.sandbox"}},
		{Name: "c", Tools: []string{"agent"}, DenyTools: []string{"agent"}},
		{Name: "d", Tools: []string{"ask"}},
		{Name: "e", Tools: []string{"agent"}},
	}
	got := c.PrivatePaths()
	for _, p := range []string{"/srv/garra", "/var/log/garra/audit.jsonl", "/etc/garra/owner.key", "/etc/garra/dsn", "/etc/garra/a.token", "/etc/garra/b.sandbox"} {
		if !slices.Contains(got, p) {
			t.Errorf("PrivatePaths() = %v lacks %s", got, p)
		}
	}
	if n := c.LocalWorkspaces(); n != 2 {
		t.Errorf("LocalWorkspaces() = %d, want 2 (a and e)", n)
	}
}
