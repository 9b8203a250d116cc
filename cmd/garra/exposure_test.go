package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// bootLog starts `garra mcp-server` with garra_agent on, closes its stdin
// and returns what it logged.
func bootLog(t *testing.T, configYAML string) string {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(cfg, []byte(configYAML), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(garraBin, "mcp-server", "--config", cfg)
	cmd.Env = testEnv(t, "GARRAIA_MCP_ENABLE_TOOLS=1", "GARRAIA_MCP_ALLOWED_DIRS="+t.TempDir())
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("mcp-server: %v\n%s", err, errb.String())
	}
	return errb.String()
}

// agent.sandbox.elevated: [bash] is accepted and does what the exposure
// table says: bash on the pod host in isolated-pod, no bash in standard.
func TestMCPServerSandboxElevated(t *testing.T) {
	const sandbox = "agent: {sandbox: {mode: all, backend: ssh, elevated: [bash]}}\n"

	logs := bootLog(t, "execution: {profile: isolated-pod}\n"+sandbox)
	if !strings.Contains(logs, "garra_agent enabled") || !strings.Contains(logs, "bash=host") {
		t.Fatalf("isolated-pod with bash elevated: want bash on the pod host\n%s", logs)
	}

	logs = bootLog(t, sandbox)
	if !strings.Contains(logs, "bash=none") || !strings.Contains(logs, "agent.sandbox.elevated lists bash") {
		t.Fatalf("standard with bash elevated: want no bash and a warning naming elevated\n%s", logs)
	}

	// The same sandbox without elevated requires the (unusable) ssh
	// sandbox: no bash even in the pod.
	logs = bootLog(t, "execution: {profile: isolated-pod}\nagent: {sandbox: {mode: all, backend: ssh}}\n")
	if !strings.Contains(logs, "bash=none") {
		t.Fatalf("isolated-pod with an ssh sandbox required: want no bash\n%s", logs)
	}
}
