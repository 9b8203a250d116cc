package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/garraia/garra/internal/unbuffered"
	"github.com/garraia/garra/test/mcpwire"
)

// POST /mcp answers both protocol revisions: the go-sdk client at
// 2025-11-25 goes through initialize, at 2026-07-28 through server/discover
// with the version in every request's _meta and header, and at both it
// lists the caller's tools and calls one.
func TestMCPBothRevisions(t *testing.T) {
	h := start(t, enabled, nil)
	for _, rev := range mcpwire.Revisions {
		t.Run(rev, func(t *testing.T) {
			cs, rec := mcpwire.Connect(t, h.url+"/mcp", ownerKey, rev)
			init := cs.InitializeResult()
			mcpwire.CheckStaticLists(t, init.Capabilities, "tools", "resources", "prompts")

			if got := toolNames(t, cs); got != "garra_list_chats garra_pair_status garra_read_history garra_status" {
				t.Fatalf("owner tools at %s: %s", rev, got)
			}
			env, isErr := call(t, cs, "garra_status", map[string]any{})
			if data, _ := env["data"].(map[string]any); isErr || env["ok"] != true || data["version"] != "test" {
				t.Fatalf("garra_status at %s: %v", rev, env)
			}
			mcpwire.CheckRequests(t, rev, true, rec.Sent())
		})
	}
}

// A subscriptions/listen stream, like a call that asked for progress, is
// sent as server-sent events and tells a proxy in front not to buffer it.
// A JSON answer is left alone.
func TestListenStreamIsUnbuffered(t *testing.T) {
	h := start(t, enabled, nil)
	resp, first := mcpwire.Listen(t, h.url+"/mcp", ownerKey)
	if got := resp.Header.Get(unbuffered.Header); got != "no" {
		t.Fatalf("%s = %q on the listen stream", unbuffered.Header, got)
	}
	if !strings.Contains(first, "notifications/subscriptions/acknowledged") {
		t.Fatalf("first event: %s", first)
	}

	plain, err := doRawPost(context.Background(), h.url, ownerKey, toolsList)
	if err != nil {
		t.Fatal(err)
	}
	plain.Body.Close()
	if plain.StatusCode != http.StatusOK || plain.Header.Get(unbuffered.Header) != "" || plain.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("JSON answer: status %d, headers %v", plain.StatusCode, plain.Header)
	}
}
