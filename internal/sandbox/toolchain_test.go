package sandbox_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/sandbox"
	"github.com/garraia/garra/internal/toolchain"
)

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
	ws := t.TempDir()
	srv, err := sandbox.New(sandbox.Options{
		Workspace: ws, Token: testToken, ToolchainPATH: bin, ToolchainTTL: time.Hour,
		RequiredTools: []string{"go", "node"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	f := &fixture{http: hs}
	cs := f.client(t, testToken)
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
	srv, err := sandbox.New(sandbox.Options{
		Workspace: t.TempDir(), Token: testToken, ToolchainPATH: bin, ToolchainTTL: time.Millisecond,
		RequiredTools: []string{"node"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(hs.Close)
	cs := (&fixture{http: hs}).client(t, testToken)
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
	time.Sleep(5 * time.Millisecond)
	if got := read(); !strings.Contains(got, `"missing":[]`) || !strings.Contains(got, `"version":"v24.0.0"`) {
		t.Errorf("after the TTL: %s", got)
	}
}

func TestNewRefusesABadRequiredTool(t *testing.T) {
	_, err := sandbox.New(sandbox.Options{Workspace: t.TempDir(), Token: testToken, RequiredTools: []string{"go", "../bin/sh"}})
	if err == nil || !strings.Contains(err.Error(), `required tools: entry 2 ("../bin/sh") is not a program name`) {
		t.Errorf("New = %v", err)
	}
}
