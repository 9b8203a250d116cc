package sandbox_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/sandbox"
	"github.com/garraia/garra/internal/toolchain"
)

// toolchainClient serves a sandbox with o (plus a workspace and the test
// token) and connects a client to it.
func toolchainClient(t *testing.T, o sandbox.Options) *mcp.ClientSession {
	t.Helper()
	o.Workspace, o.Token = t.TempDir(), testToken
	srv, err := sandbox.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	return (&fixture{http: hs}).client(t, testToken)
}

// TestToolchainResource: garra://sandbox/toolchain lists what is on the
// sandbox's PATH with versions and the required tools that are missing,
// served from one discovery until its TTL.
func TestToolchainResource(t *testing.T) {
	bin := t.TempDir()
	script := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script("go", `echo "go version go1.99.1 linux/amd64"`)
	script("make", `echo "GNU Make 4.4.1"`)
	cs := toolchainClient(t, sandbox.Options{ToolchainPATH: bin, ToolchainTTL: time.Hour, RequiredTools: []string{"go", "node"}})
	ctx := context.Background()

	list, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Resources) != 1 || list.Resources[0].URI != toolchain.URI || list.Resources[0].MIMEType != "application/json" {
		t.Fatalf("resources = %+v", list.Resources)
	}
	read := func() toolchain.Report {
		t.Helper()
		res, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: toolchain.URI})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Contents) != 1 || res.Contents[0].MIMEType != "application/json" {
			t.Fatalf("contents = %+v", res.Contents)
		}
		var rep toolchain.Report
		if err := json.Unmarshal([]byte(res.Contents[0].Text), &rep); err != nil {
			t.Fatal(err)
		}
		return rep
	}
	rep := read()
	want := []toolchain.Tool{
		{Name: "go", Path: filepath.Join(bin, "go"), Version: "go version go1.99.1 linux/amd64", Required: true},
		{Name: "make", Path: filepath.Join(bin, "make"), Version: "GNU Make 4.4.1"},
	}
	if !slices.Equal(rep.Tools, want) || !slices.Equal(rep.Missing, []string{"node"}) || !slices.Equal(rep.Required, []string{"go", "node"}) {
		t.Errorf("report = %+v", rep)
	}

	// Within the TTL a new program is not seen: the discovery is served.
	script("node", `echo v24.0.0`)
	if again := read(); !again.DiscoveredAt.Equal(rep.DiscoveredAt) || !slices.Equal(again.Missing, []string{"node"}) {
		t.Errorf("second read ran a new discovery: %+v", again)
	}
}

func TestToolchainTTLRediscovers(t *testing.T) {
	bin := t.TempDir()
	cs := toolchainClient(t, sandbox.Options{ToolchainPATH: bin, ToolchainTTL: time.Millisecond, RequiredTools: []string{"node"}})
	read := func() string {
		res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: toolchain.URI})
		if err != nil {
			t.Fatal(err)
		}
		return res.Contents[0].Text
	}
	if got := read(); !strings.Contains(got, `"missing":["node"]`) {
		t.Fatalf("first read: %s", got)
	}
	if err := os.WriteFile(filepath.Join(bin, "node"), []byte("#!/bin/sh\necho v24.0.0\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Past the TTL a read answers at once with what it has and starts a
	// new discovery, which the next reads see.
	deadline := time.Now().Add(10 * time.Second)
	for got := read(); !strings.Contains(got, `"missing":[]`) || !strings.Contains(got, `"version":"v24.0.0"`); got = read() {
		if time.Now().After(deadline) {
			t.Fatalf("after the TTL, still: %s", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestNewRefusesABadRequiredTool(t *testing.T) {
	_, err := sandbox.New(sandbox.Options{Workspace: t.TempDir(), Token: testToken, RequiredTools: []string{"go", "../bin/sh"}})
	if err == nil || !strings.Contains(err.Error(), `required tools: entry 2 ("../bin/sh") is not a program name`) {
		t.Errorf("New = %v", err)
	}
}

// TestToolchainFirstReadIsBounded: a read that comes while the first
// discovery is still running waits no longer than its own context and
// says so; a stale report is answered at once, not after a rediscovery.
func TestToolchainFirstReadIsBounded(t *testing.T) {
	bin := t.TempDir()
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep here")
	}
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte("#!/bin/sh\n"+sleep+" 1.5\necho go1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cs := toolchainClient(t, sandbox.Options{ToolchainPATH: bin, ToolchainTTL: time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	_, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: toolchain.URI})
	if err == nil || time.Since(t0) > 2*time.Second {
		t.Fatalf("first read during the discovery: %v after %v", err, time.Since(t0))
	}
	// Once it is done, reads past the TTL answer without waiting for the
	// next (also 1.5 s) discovery.
	deadline := time.Now().Add(15 * time.Second)
	for {
		res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: toolchain.URI})
		if err == nil && strings.Contains(res.Contents[0].Text, `"version":"go1"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never answered: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for range 3 {
		t1 := time.Now()
		if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: toolchain.URI}); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(t1); d > time.Second {
			t.Errorf("a stale read waited %v for the rediscovery", d)
		}
	}
}
