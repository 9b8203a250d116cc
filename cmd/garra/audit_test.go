package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/test/fakes/llmdouble"
)

// The stdio server appends to the audit file of the `audit:` section: by
// default <data_dir>/audit.jsonl, next to its key.
func TestMCPServerWritesTheAuditFile(t *testing.T) {
	double := llmdouble.New(t, llmdouble.Step{Text: "the answer is VERMILION"})
	home := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "OPENROUTER_API_KEY=" + fakeKey}
	cs, _, stderr := startServer(t, env, "--config", writeConfig(t, "openrouter", double.URL()+"/v1"))
	ctx := context.Background()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "garra_ask", Arguments: map[string]any{"message": "secret question OCHRE"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "garra://policy"}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(home, ".garraia")
	raw, err := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatalf("%v\nstderr: %s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"surface":"stdio","caller":"child-test","tool":"garra_ask","outcome":"ok"`) ||
		!strings.Contains(lines[1], `"resource":"garra://policy","outcome":"ok"`) {
		t.Fatalf("audit file:\n%s", raw)
	}
	for _, secret := range []string{"OCHRE", "VERMILION", fakeKey} {
		if strings.Contains(string(raw), secret) {
			t.Fatalf("audit file holds %q", secret)
		}
	}
	for _, name := range []string{"audit.jsonl", "audit.key"} {
		if fi, err := os.Stat(filepath.Join(dir, name)); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v", name, fi, err)
		}
	}
	if !strings.Contains(stderr.String(), "audit="+filepath.Join(dir, "audit.jsonl")) {
		t.Fatalf("boot line does not name the audit file:\n%s", stderr.String())
	}
}

// A broken audit path costs one stderr line, never a call.
func TestMCPServerServesWithABrokenAuditFile(t *testing.T) {
	double := llmdouble.New(t, llmdouble.Step{Text: "fine"})
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "config.yml")
	body := "llm: {provider: openrouter, base_url: " + double.URL() + "/v1}\naudit: {path: " + filepath.Join(blocker, "audit.jsonl") + "}\n"
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cs, _, stderr := startServer(t, testEnv(t, "OPENROUTER_API_KEY="+fakeKey), "--config", cfg)
	for range 2 {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "garra_ask", Arguments: map[string]any{"message": "hi"}})
		if err != nil || res.IsError {
			t.Fatalf("call failed: %v %+v", err, res)
		}
	}
	if n := strings.Count(stderr.String(), "audit file not written"); n != 1 {
		t.Fatalf("%d audit errors on stderr, want 1:\n%s", n, stderr.String())
	}
}
