package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The garra gateway binary reports the hash of the config file it serves,
// applies an edit of that file and a new token file without a restart, and
// on SIGTERM drains and exits.
func TestGatewayBinaryReloadsLiveAndDrainsOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	if err := os.Mkdir(tokens, 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(p, body string) {
		t.Helper()
		if err := os.WriteFile(p+".tmp", []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(tokens, "owner"), e2eOwnerKey+"\n")
	write(filepath.Join(tokens, "alpha"), e2eAlphaKey+"\n")
	cfg := func(names ...string) string {
		s := fmt.Sprintf("data_dir: %s\nllm: {provider: ollama, model: llama3.2}\ngateway:\n  listen: 127.0.0.1:0\n  drain_seconds: 5\n  api_key_file: %s\n  mcp_http:\n    enabled: true\n    orchestrators:\n",
			filepath.Join(dir, "data"), filepath.Join(tokens, "owner"))
		for _, n := range names {
			s += fmt.Sprintf("      - {name: %s, key_file: %s, tools: [status]}\n", n, filepath.Join(tokens, n))
		}
		return s
	}
	path := filepath.Join(dir, "config.yml")
	write(path, cfg("alpha"))
	addr, logs := startChild(t, dir, testEnv(t), gatewayListeningLine, "gateway", "--config", path)
	base := "http://" + addr

	status := func(token string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	hashHeader := func() string {
		t.Helper()
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp.Header.Get("X-Garra-Config-Hash")
	}
	hashOf := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	if got := hashHeader(); got != hashOf(cfg("alpha")) {
		t.Fatalf("readyz hash %q, want the file's %q", got, hashOf(cfg("alpha")))
	}
	if status(e2eAlphaKey) != 200 || status(e2eBetaKey) != 401 {
		t.Fatal("at start: alpha must pass, beta must not")
	}

	start := time.Now()
	write(filepath.Join(tokens, "beta"), e2eBetaKey+"\n")
	write(path, cfg("alpha", "beta"))
	for status(e2eBetaKey) != 200 {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("beta never became callable:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("garra gateway binary: config edit to new orchestrator serving in %v", time.Since(start).Round(time.Millisecond))
	if got := hashHeader(); got != hashOf(cfg("alpha", "beta")) {
		t.Fatalf("readyz hash after the edit %q", got)
	}

	start = time.Now()
	if err := syscall.Kill(logs.pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	for syscall.Kill(logs.pid, 0) == nil {
		if time.Since(start) > 15*time.Second {
			t.Fatalf("the gateway did not exit after SIGTERM:\n%s", logs.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(logs.String(), "drained") {
		t.Fatalf("no drain line:\n%s", logs.String())
	}
	t.Logf("garra gateway binary: idle drain and exit %v after SIGTERM", time.Since(start).Round(time.Millisecond))
}
