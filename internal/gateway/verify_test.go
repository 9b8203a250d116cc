package gateway_test

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/garraia/garra/internal/gateway"
	"github.com/garraia/garra/internal/sandbox"
	"github.com/garraia/garra/internal/sandboxz"
)

// getSandboxz GETs /sandboxz with token and decodes a 200's report.
func getSandboxz(t *testing.T, url, token string) (int, sandboxz.Report) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url+"/sandboxz", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rep sandboxz.Report
	if resp.StatusCode == http.StatusOK {
		if err := json.NewDecoder(resp.Body).Decode(&rep); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, rep
}

// The gateway shakes hands with every sandbox under its token and tells
// the owner which ones work: a real sandbox is verified; one that refuses
// the token, and one that is not there, are not, each with its reason.
// A reload checks again at once, not at the next interval.
func TestSandboxesVerifiedByARealHandshake(t *testing.T) {
	// The sandbox's toolchain: a stand-in bash alone on its PATH.
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, "bash"), []byte("#!/bin/sh\necho 'GNU bash, version 5.2.15'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	sbxURL, _, _ := startSandbox(t, func(o *sandbox.Options) { o.ToolchainPATH = bin })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	goneURL := "http://" + ln.Addr().String() + "/mcp"
	_ = ln.Close()

	l := newLive(t, map[string]string{"GOOD": sandboxToken, "BAD": "not-the-sandbox-token-0123"})
	for _, n := range []string{"good", "wrong", "gone", "local"} {
		l.writeToken(n, n+"-caller-token-0123456-0123456789\n")
	}
	config := func(wrongEnv string) string {
		return "gateway:\n  listen: 127.0.0.1:0\n  rate_limit: {requests_per_minute: 100000}\n  api_key: " + ownerKey + "\n  mcp_http:\n    enabled: true\n    allow_agent: true\n    orchestrators:\n" +
			"      - {name: good, key_file: " + l.keyFile("good") + ", tools: [agent], sandbox: {url: \"" + sbxURL + "\", token_env: GOOD}}\n" +
			"      - {name: wrong, key_file: " + l.keyFile("wrong") + ", tools: [agent], sandbox: {url: \"" + sbxURL + "\", token_env: " + wrongEnv + "}}\n" +
			"      - {name: gone, key_file: " + l.keyFile("gone") + ", tools: [agent], sandbox: {url: \"" + goneURL + "\", token_env: GOOD}}\n" +
			"      - {name: local, key_file: " + l.keyFile("local") + ", tools: [status]}\n" +
			"llm: {provider: ollama, model: llama3.2}\n"
	}
	l.writeConfig(config("BAD"))
	l.run()

	var rep sandboxz.Report
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, r := getSandboxz(t, l.url, ownerKey)
		if code != http.StatusOK {
			t.Fatalf("GET /sandboxz as the owner: %d", code)
		}
		if len(r.Sandboxes) == 3 {
			rep = r
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no verdicts for the three sandboxes: %+v", r)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if v := rep.Sandboxes["good"]; !v.Verified || v.Tools == 0 || v.Reason != "" {
		t.Errorf("good: %+v", v)
	}
	if v := rep.Sandboxes["wrong"]; v.Verified || v.Reason != sandboxz.TokenRefused {
		t.Errorf("wrong token: %+v", v)
	}
	if v := rep.Sandboxes["gone"]; v.Verified || v.Reason != sandboxz.Unreachable || !strings.Contains(v.Message, "could not be reached") {
		t.Errorf("gone: %+v", v)
	}
	if _, ok := rep.Sandboxes["local"]; ok {
		t.Error("an orchestrator without a sandbox has a verdict")
	}
	raw, _ := json.Marshal(rep)
	for _, secret := range []string{sandboxToken, "not-the-sandbox-token-0123"} {
		if strings.Contains(string(raw), secret) {
			t.Fatalf("the report carries a token: %s", raw)
		}
	}

	// Only the owner may read it.
	if code, _ := getSandboxz(t, l.url, ""); code != http.StatusUnauthorized {
		t.Errorf("no bearer: %d, want 401", code)
	}
	if code, _ := getSandboxz(t, l.url, "good-caller-token-0123456-0123456789"); code != http.StatusForbidden {
		t.Errorf("an orchestrator's bearer: %d, want 403", code)
	}

	// The repaired token is verified right after the reload.
	start := time.Now()
	l.writeConfig(config("GOOD"))
	for {
		_, r := getSandboxz(t, l.url, ownerKey)
		if r.Sandboxes["wrong"].Verified {
			break
		}
		if time.Since(start) > gateway.VerifyInterval/2 {
			t.Fatalf("the repaired sandbox is still not verified %v after the reload: %+v", time.Since(start), r.Sandboxes["wrong"])
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("repaired token verified %v after the config was written", time.Since(start).Round(time.Millisecond))
	// By now the sandbox has discovered its toolchain (the first discovery
	// may outlast the first round's bound): the verdict names it.
	if _, r := getSandboxz(t, l.url, ownerKey); !slices.Contains(r.Sandboxes["wrong"].Toolchain, "bash") {
		t.Errorf("the verdict lists no bash in the toolchain: %+v", r.Sandboxes["wrong"])
	}
}
