package sandbox_test

import (
	"strings"
	"testing"

	"github.com/garraia/garra/internal/unbuffered"
	"github.com/garraia/garra/test/mcpwire"
)

// The sandbox answers both protocol revisions, promises no list_changed
// (its tools and resource are fixed), and its one SSE response, a
// subscriptions/listen stream, tells a proxy in front not to buffer it.
func TestBothRevisionsAndUnbufferedListen(t *testing.T) {
	f := newFixture(t)
	for _, rev := range mcpwire.Revisions {
		t.Run(rev, func(t *testing.T) {
			cs, rec := mcpwire.Connect(t, f.http.URL+"/mcp", testToken, rev)
			mcpwire.CheckStaticLists(t, cs.InitializeResult().Capabilities, "tools", "resources")
			if out, isErr := call(t, cs, "file_write", map[string]any{"path": "r.txt", "content": rev}); isErr {
				t.Fatalf("file_write at %s: %s", rev, out)
			}
			mcpwire.CheckRequests(t, rev, true, rec.Sent())
		})
	}

	resp, first := mcpwire.Listen(t, f.http.URL+"/mcp", testToken)
	if resp.Header.Get(unbuffered.Header) != "no" || !strings.Contains(first, "notifications/subscriptions/acknowledged") {
		t.Fatalf("listen stream: headers %v, first event %s", resp.Header, first)
	}
}
