// Package mcpwire holds test helpers that check which MCP protocol
// revision a go-sdk client actually spoke, from the messages it sent, and
// what a server's capabilities promise. Garra's servers answer both
// revisions: 2025-11-25 opens with the initialize handshake (and, over HTTP,
// states its version in a header after it), 2026-07-28 has no initialize
// and names its version in every request's _meta and, over HTTP, in the
// MCP-Protocol-Version header of every POST.
package mcpwire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The two revisions: the last with the initialize handshake, and the first
// without it.
const (
	Handshake = "2025-11-25"
	Stateless = "2026-07-28"
)

// Revisions are the protocol revisions Garra's servers are tested at.
var Revisions = []string{Handshake, Stateless}

const metaVersion = "io.modelcontextprotocol/protocolVersion"

// Sent is one message a client sent, with the MCP-Protocol-Version header
// of its HTTP request (empty over stdio).
type Sent struct {
	Header string
	Body   []byte
}

// Lines splits newline-delimited JSON-RPC, as over stdio, into messages.
func Lines(raw string) []Sent {
	var out []Sent
	for _, l := range strings.Split(raw, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, Sent{Body: []byte(l)})
		}
	}
	return out
}

// CheckRequests fails t unless the requests among sent are those of
// revision rev: at Stateless none is initialize and each names rev in its
// _meta (and in the header, over HTTP); at an older revision the first is
// initialize asking for rev and none carries a version in _meta.
func CheckRequests(t testing.TB, rev string, overHTTP bool, sent []Sent) {
	t.Helper()
	n := 0
	for _, s := range sent {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string         `json:"protocolVersion"`
				Meta            map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if err := json.Unmarshal(s.Body, &m); err != nil {
			t.Fatalf("client sent a line that is not JSON: %q", s.Body)
		}
		if m.Method == "" || m.ID == nil {
			continue // a notification or a response
		}
		n++
		inMeta, _ := m.Params.Meta[metaVersion].(string)
		if rev >= Stateless {
			if m.Method == "initialize" {
				t.Fatalf("at %s the client sent initialize: %s", rev, s.Body)
			}
			if inMeta != rev {
				t.Fatalf("at %s a request names %q in _meta: %s", rev, inMeta, s.Body)
			}
			if overHTTP && s.Header != rev {
				t.Fatalf("at %s a POST has MCP-Protocol-Version %q: %s", rev, s.Header, s.Body)
			}
			continue
		}
		if n == 1 && (m.Method != "initialize" || m.Params.ProtocolVersion != rev) {
			t.Fatalf("at %s the first request is not initialize asking for it: %s", rev, s.Body)
		}
		if inMeta != "" {
			t.Fatalf("at %s a request names %q in _meta: %s", rev, inMeta, s.Body)
		}
		if overHTTP && n > 1 && s.Header != rev {
			t.Fatalf("at %s a POST after initialize has MCP-Protocol-Version %q: %s", rev, s.Header, s.Body)
		}
	}
	if n < 2 {
		t.Fatalf("only %d requests seen; the check needs the session's own requests too", n)
	}
}

// CheckStaticLists fails t unless caps advertises logging and exactly the
// named lists ("tools", "resources", "prompts"), none with listChanged: a
// server whose lists are fixed never sends list_changed.
func CheckStaticLists(t testing.TB, caps *mcp.ServerCapabilities, lists ...string) {
	t.Helper()
	if caps == nil {
		t.Fatal("no capabilities")
	}
	has := func(name string) bool {
		for _, l := range lists {
			if l == name {
				return true
			}
		}
		return false
	}
	got := map[string]struct{ present, listChanged bool }{}
	if c := caps.Tools; c != nil {
		got["tools"] = struct{ present, listChanged bool }{true, c.ListChanged}
	}
	if c := caps.Resources; c != nil {
		got["resources"] = struct{ present, listChanged bool }{true, c.ListChanged}
	}
	if c := caps.Prompts; c != nil {
		got["prompts"] = struct{ present, listChanged bool }{true, c.ListChanged}
	}
	for _, name := range []string{"tools", "resources", "prompts"} {
		g := got[name]
		switch {
		case g.present != has(name):
			t.Errorf("capability %s present=%v, want %v", name, g.present, has(name))
		case g.listChanged:
			t.Errorf("capability %s promises listChanged, but the list never changes", name)
		}
	}
	if caps.Logging == nil { //nolint:staticcheck // SA1019: deprecated at 2026-07-28, still served for 2025-11-25 clients
		t.Error("the logging capability is gone")
	}
}

// Recorder is an http.RoundTripper that keeps the body and the
// MCP-Protocol-Version header of every request it passes on to Next (with
// Token, when set, as the bearer).
type Recorder struct {
	Next  http.RoundTripper
	Token string

	mu   sync.Mutex
	sent []Sent
}

// RoundTrip implements http.RoundTripper.
func (r *Recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	if r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		if len(body) > 0 {
			r.mu.Lock()
			r.sent = append(r.sent, Sent{Header: req.Header.Get("Mcp-Protocol-Version"), Body: body})
			r.mu.Unlock()
		}
	}
	return r.Next.RoundTrip(req)
}

// Sent returns what was sent so far, in order.
func (r *Recorder) Sent() []Sent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Sent(nil), r.sent...)
}

// Listen opens a 2026-07-28 subscriptions/listen stream on url (an MCP
// endpoint) with the bearer token, and returns the response once its first
// event, which it returns too, has arrived: the stream is then live. It
// ends with the test.
func Listen(t testing.TB, url, token string) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"_meta":{` +
		`"` + metaVersion + `":"` + Stateless + `","io.modelcontextprotocol/clientCapabilities":{}},` +
		`"notifications":{"toolsListChanged":true}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", Stateless)
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("listen: status %d, Content-Type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			return resp, data
		}
	}
	t.Fatalf("listen stream ended without an event: %v", sc.Err())
	return nil, ""
}

// Connect connects the go-sdk client to the MCP endpoint url with the
// bearer token, asking for revision rev, and fails t unless rev is what it
// negotiated. The Recorder has every message the client sends.
func Connect(t testing.TB, url, token, rev string) (*mcp.ClientSession, *Recorder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	rec := &Recorder{Next: http.DefaultTransport, Token: token}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "mcpwire", Version: "0"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rec}},
		&mcp.ClientSessionOptions{ProtocolVersion: rev})
	if err != nil {
		t.Fatalf("connect at %s: %v", rev, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != rev {
		t.Fatalf("negotiated %q, want %q", got, rev)
	}
	return cs, rec
}
