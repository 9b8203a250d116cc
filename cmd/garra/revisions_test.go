package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/test/fakes/llmdouble"
	"github.com/garraia/garra/test/mcpwire"
)

// The built `garra mcp-server` answers both protocol revisions over stdio:
// the go-sdk client at 2025-11-25 goes through initialize, at 2026-07-28
// through server/discover and per-request _meta, and at both it lists the
// tools and calls garra_ask.
func TestStdioServerBothRevisions(t *testing.T) {
	for _, rev := range mcpwire.Revisions {
		t.Run(rev, func(t *testing.T) {
			double := llmdouble.New(t, llmdouble.Step{Text: "Paris"})
			cfg := writeConfig(t, "openrouter", double.URL()+"/v1")
			w := startServerAt(t, nil, rev, testEnv(t, "OPENROUTER_API_KEY="+fakeKey), "--config", cfg)
			ctx := context.Background()

			init := w.cs.InitializeResult()
			if init.ProtocolVersion != rev {
				t.Fatalf("negotiated %q, want %q\nstderr: %s", init.ProtocolVersion, rev, w.stderr.String())
			}
			mcpwire.CheckStaticLists(t, init.Capabilities, "tools", "resources", "prompts")

			tools, err := w.cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(tools.Tools) != 1 || tools.Tools[0].Name != "garra_ask" {
				t.Fatalf("tools/list = %+v", tools.Tools)
			}
			res, err := w.cs.CallTool(ctx, &mcp.CallToolParams{Name: "garra_ask", Arguments: map[string]any{"message": "Capital of France?"}})
			if err != nil {
				t.Fatal(err)
			}
			var env map[string]any
			if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &env); err != nil {
				t.Fatal(err)
			}
			if res.IsError || env["ok"] != true || env["answer"] != "Paris" {
				t.Fatalf("garra_ask at %s: %v", rev, env)
			}
			if n := len(double.Requests()); n != 1 {
				t.Fatalf("the provider saw %d requests, want 1", n)
			}

			mcpwire.CheckRequests(t, rev, false, mcpwire.Lines(w.stdin.String()))
			out := w.stdout.String()
			assertJSONRPCOnly(t, out)
			// The handshake's answer names one version; the discovery's
			// lists the versions the server speaks.
			if discovered := strings.Contains(out, `"supportedVersions":[`); discovered != (rev == mcpwire.Stateless) {
				t.Fatalf("at %s, server/discover answered: %v\n%s", rev, discovered, out)
			}
		})
	}
}
