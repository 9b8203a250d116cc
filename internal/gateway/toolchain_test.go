package gateway_test

import (
	"context"
	"net"
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
	sbxURL, sbxLogs, _ := startSandbox(t, func(o *sandbox.Options) {
		o.ToolchainPATH, o.RequiredTools = bin, []string{"go", "node"}
	})
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

// TestToolchainResourceIsTheCallersOwn: garra://sandbox/toolchain is
// listed and readable only by a caller whose agent runs in a sandbox, and
// each reads its own sandbox's; a sandbox that does not answer is an
// error that says so without detail.
func TestToolchainResourceIsTheCallersOwn(t *testing.T) {
	sandboxWith := func(prog, line string) string {
		bin := t.TempDir()
		if err := os.WriteFile(filepath.Join(bin, prog), []byte("#!/bin/sh\necho '"+line+"'\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		url, _, _ := startSandbox(t, func(o *sandbox.Options) { o.ToolchainPATH = bin })
		return url
	}
	urlA, urlB := sandboxWith("go", "go version go1.99.1"), sandboxWith("make", "GNU Make 4.4.1")
	// Nothing listens there once the listener is closed.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String() + "/mcp"
	_ = ln.Close()
	orch := func(name, tools, url string) string {
		out := "      - name: " + name + "\n        key_env: KEY_" + strings.ToUpper(name) + "\n        tools: " + tools + "\n"
		if url != "" {
			out += "        sandbox: {url: \"" + url + "\", token_env: SBX_TOKEN}\n"
		}
		return out
	}
	yaml := enabled + "    allow_agent: true\n    orchestrators:\n" +
		orch("alpha", "[agent]", urlA) + orch("beta", "[agent, status]", urlB) +
		orch("gamma", "[status]", urlA) + orch("delta", "[agent]", "") + orch("dead", "[agent]", dead) +
		"llm: {provider: openai, model: gpt-test}\n"
	env := map[string]string{"SBX_TOKEN": sandboxToken}
	for _, n := range []string{"alpha", "beta", "gamma", "delta", "dead"} {
		env["KEY_"+strings.ToUpper(n)] = "token-of-" + n + "-0123456789"
	}
	h := start(t, yaml, env)
	ctx := context.Background()
	for _, tc := range []struct {
		caller, want string // want: a tool the read names, "" = not listed, not readable
	}{
		{"alpha", `"name":"go","path":`},
		{"beta", `"name":"make","path":`},
		{"gamma", ""},
		{"delta", ""},
	} {
		cs := client(t, h.url, "token-of-"+tc.caller+"-0123456789")
		list, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		listed := false
		for _, r := range list.Resources {
			listed = listed || r.URI == "garra://sandbox/toolchain"
		}
		if listed != (tc.want != "") {
			t.Errorf("%s: listed = %v", tc.caller, listed)
		}
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "garra://sandbox/toolchain"})
		if tc.want == "" {
			if err == nil || !strings.Contains(err.Error(), "Resource not found") {
				t.Errorf("%s: read = %+v, %v; want not found", tc.caller, res, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.caller, err)
		}
		text := res.Contents[0].Text
		if !strings.Contains(text, tc.want) || strings.Contains(text, map[string]string{"alpha": `"make"`, "beta": `"go"`}[tc.caller]) {
			t.Errorf("%s read another sandbox's toolchain, or not its own: %s", tc.caller, text)
		}
	}
	cs := client(t, h.url, "token-of-dead-0123456789")
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "garra://sandbox/toolchain"})
	if err == nil || !strings.Contains(err.Error(), "your sandbox is unavailable") || strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("dead sandbox: %v", err)
	}
}
