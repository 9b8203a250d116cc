package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/sandbox"
	"github.com/garraia/garra/test/fakes/llmdouble"
)

// TestAgentPromptNamesTheSandboxToolchain: before a run the gateway reads
// the caller's sandbox toolchain (a real sandbox on loopback, its PATH a
// directory of stand-ins) and the model's system prompt names it; a
// caller's own system prompt is sent as given.
func TestAgentPromptNamesTheSandboxToolchain(t *testing.T) {
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte("#!/bin/sh\necho 'go version go1.99.1 linux/amd64'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sbxURL, sbxLogs, _ := startSandboxWith(t, sandbox.Options{ToolchainPATH: bin, RequiredTools: []string{"go", "node"}})
	double := llmdouble.New(t, llmdouble.Step{Text: "done"}, llmdouble.Step{Text: "done again"})
	h := startWithSandbox(t, sbxURL, double.OpenAIBaseURL(), "")
	cs := client(t, h.url, "alpha-token-1234567")
	for _, args := range []map[string]any{{"message": "build it"}, {"message": "build it", "system_prompt": "be terse"}} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_agent", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("garra_agent %v: %v %+v", args, err, res)
		}
	}
	reqs := double.Requests()
	if len(reqs) != 2 {
		t.Fatalf("model asked %d times", len(reqs))
	}
	for _, want := range []string{"Programs on the sandbox's PATH", "go (go version go1.99.1 linux/amd64)", "Required but missing: node."} {
		if !strings.Contains(reqs[0].System, want) {
			t.Errorf("system prompt lacks %q:\n%s", want, reqs[0].System)
		}
	}
	if reqs[1].System != "be terse" {
		t.Errorf("a caller's system prompt became %q", reqs[1].System)
	}
	if !strings.Contains(sbxLogs.String(), `msg="resource read" uri=garra://sandbox/toolchain`) {
		t.Errorf("the sandbox did not serve the toolchain:\n%s", sbxLogs.String())
	}
}
