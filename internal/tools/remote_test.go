// External test package: it runs Remote against a real sandbox.Server,
// and internal/sandbox imports internal/tools.
package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/sandbox"
	"github.com/garraia/garra/internal/tools"
)

const remoteToken = "remote-test-token-0123456789abcdef"

// sandboxServer starts a sandbox on a temp workspace behind httptest,
// with wrap (if any) around its handler.
func sandboxServer(t testing.TB, wrap func(http.Handler) http.Handler) (url, ws string) {
	t.Helper()
	ws = t.TempDir()
	srv, err := sandbox.New(sandbox.Options{Workspace: ws, Token: remoteToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	h := srv.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp", srv.Workspace()
}

func newRemote(url, token string) *tools.Remote {
	return tools.NewRemote(tools.RemoteOptions{URL: url, Token: token})
}

func mustCall(t *testing.T, r *tools.Remote, name, args string) tools.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := r.Call(ctx, name, json.RawMessage(args))
	if err != nil {
		t.Fatalf("%s %s: %v", name, args, err)
	}
	return res
}

func TestRemoteListsTheSandboxTools(t *testing.T) {
	url, _ := sandboxServer(t, nil)
	r := newRemote(url, remoteToken)
	got, err := r.Tools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want, _ := tools.NewLocal(tools.LocalOptions{Bash: &tools.HostRunner{PodNetwork: true}}).Tools(context.Background())
	if g, w := tools.Names(got), tools.Names(want); !slices.Equal(g, w) {
		t.Fatalf("names %v, want %v", g, w)
	}
	for i := range got {
		if got[i].Description != want[i].Description || !bytes.Equal(got[i].InputSchema, want[i].InputSchema) {
			t.Errorf("%s differs:\n got %q %s\nwant %q %s", got[i].Name, got[i].Description, got[i].InputSchema, want[i].Description, want[i].InputSchema)
		}
	}
}

func TestRemoteCallRoundTrip(t *testing.T) {
	url, ws := sandboxServer(t, nil)
	r := newRemote(url, remoteToken)

	res := mustCall(t, r, "file_write", `{"path":"dir/f.txt","content":"héllo\nworld"}`)
	if res.IsError || !strings.Contains(res.Output, "wrote 12 bytes to dir/f.txt") {
		t.Fatalf("file_write: %+v", res)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "dir", "f.txt")); err != nil || string(b) != "héllo\nworld" {
		t.Fatalf("on disk: %q %v", b, err)
	}
	res = mustCall(t, r, "file_read", `{"path":"dir/f.txt"}`)
	if res.IsError || res.Output != "héllo\nworld" {
		t.Fatalf("file_read: %+v", res)
	}
	if _, err := os.Stat("/bin/bash"); err == nil {
		res = mustCall(t, r, "bash", `{"command":"pwd"}`)
		if res.IsError || strings.TrimSpace(res.Output) != ws {
			t.Fatalf("pwd: %+v, want %s", res, ws)
		}
	}
}

func TestRemoteIsErrorPropagates(t *testing.T) {
	url, _ := sandboxServer(t, nil)
	r := newRemote(url, remoteToken)
	for _, tc := range []struct{ name, args, want string }{
		{"file_read", `{"path":"missing.txt"}`, "does not exist"},
		{"file_write", `{"path":"../x.txt","content":"x"}`, "outside the allowed directories"},
		{"bash", `{"command":"printenv"}`, "blocked: "},
		{"bash", `{"command":"pwd","nope":1}`, "nope: unknown field"},
		{"web_fetch", `{"url":"ftp://example.com/"}`, "ftp"},
		// Not JSON at all: answered locally, still a tool error.
		{"bash", `{"command":`, "invalid JSON"},
	} {
		res := mustCall(t, r, tc.name, tc.args)
		if !res.IsError || !strings.Contains(res.Output, tc.want) {
			t.Errorf("%s %s: %+v, want an error result with %q", tc.name, tc.args, res, tc.want)
		}
	}
}

func TestRemoteUnknownTool(t *testing.T) {
	url, _ := sandboxServer(t, nil)
	r := newRemote(url, remoteToken)
	for _, name := range []string{"web_search", "nope"} {
		_, err := r.Call(context.Background(), name, json.RawMessage(`{}`))
		if !errors.Is(err, tools.ErrUnknownTool) {
			t.Errorf("%s: %v, want ErrUnknownTool", name, err)
		}
	}
	// The session survives a protocol-level error.
	if res := mustCall(t, r, "file_read", `{"path":"missing.txt"}`); !res.IsError {
		t.Errorf("after unknown tool: %+v", res)
	}
}

func TestRemoteWrongTokenIsAnErrorWithoutTheToken(t *testing.T) {
	url, _ := sandboxServer(t, nil)
	const wrong = "wrong-token-SHOULD-NOT-LEAK-0123456789"
	r := newRemote(url, wrong)
	_, err := r.Tools(context.Background())
	if err == nil {
		t.Fatal("Tools with a wrong token succeeded")
	}
	_, err2 := r.Call(context.Background(), "bash", json.RawMessage(`{"command":"pwd"}`))
	if err2 == nil {
		t.Fatal("Call with a wrong token succeeded")
	}
	for _, e := range []error{err, err2} {
		if !errors.Is(e, tools.ErrRemoteUnauthorized) {
			t.Errorf("%v: want ErrRemoteUnauthorized", e)
		}
		if strings.Contains(e.Error(), wrong) || strings.Contains(e.Error(), remoteToken) {
			t.Errorf("error carries a token: %v", e)
		}
	}
	t.Logf("wrong token: %v", err2)

	// No token at all: the same.
	_, err = newRemote(url, "").Call(context.Background(), "bash", json.RawMessage(`{"command":"pwd"}`))
	if !errors.Is(err, tools.ErrRemoteUnauthorized) {
		t.Errorf("no token: %v", err)
	}
}

func TestRemoteUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	r := newRemote("http://"+addr+"/mcp", remoteToken)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := r.Tools(ctx); err == nil {
		t.Error("Tools on a closed port succeeded")
	}
	_, err = r.Call(ctx, "bash", json.RawMessage(`{"command":"pwd"}`))
	if err == nil || errors.Is(err, tools.ErrUnknownTool) || strings.Contains(err.Error(), remoteToken) {
		t.Errorf("Call on a closed port: %v", err)
	}
	t.Logf("unreachable: %v", err)

	if _, err := newRemote("", remoteToken).Tools(ctx); err == nil {
		t.Error("no URL: no error")
	}
}

func TestRemoteReconnectsAfterAFailure(t *testing.T) {
	// Failures that break a go-sdk client session for good (unlike 5xx and
	// dial errors, which it treats as transient): a non-MCP 4xx and a
	// malformed body.
	for _, mode := range []string{"404", "garbage"} {
		t.Run(mode, func(t *testing.T) {
			var broken atomic.Bool
			url, _ := sandboxServer(t, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
					if !broken.Load() {
						h.ServeHTTP(w, req)
						return
					}
					if mode == "404" {
						http.NotFound(w, req)
						return
					}
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte("{not json"))
				})
			})
			r := newRemote(url, remoteToken)
			mustCall(t, r, "file_write", `{"path":"a","content":"1"}`)
			broken.Store(true)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if _, err := r.Call(ctx, "file_read", json.RawMessage(`{"path":"a"}`)); err == nil {
				t.Fatal("call through a failing server succeeded")
			} else {
				t.Logf("broken: %v", err)
			}
			broken.Store(false)
			if res := mustCall(t, r, "file_read", `{"path":"a"}`); res.IsError || res.Output != "1" {
				t.Fatalf("after recovery: %+v", res)
			}
		})
	}
}

func TestRemoteNeverSendsTheTokenElsewhere(t *testing.T) {
	var leaked atomic.Value
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusOK)
	}))
	defer elsewhere.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/mcp", http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	r := newRemote(redirector.URL+"/mcp", remoteToken)
	if _, err := r.Tools(context.Background()); err == nil {
		t.Error("a redirecting sandbox was accepted")
	}
	if v, _ := leaked.Load().(string); v != "" {
		t.Errorf("the token reached another server: %q", v)
	}
}

func TestRemoteConcurrentCalls(t *testing.T) {
	url, _ := sandboxServer(t, nil)
	r := newRemote(url, remoteToken)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			name := filepath.Join("c", string(rune('a'+i)))
			args, _ := json.Marshal(map[string]string{"path": name, "content": name})
			res, err := r.Call(context.Background(), "file_write", args)
			if err == nil && res.IsError {
				err = errors.New(res.Output)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestRemoteCancelledContext(t *testing.T) {
	url, _ := sandboxServer(t, nil)
	r := newRemote(url, remoteToken)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Call(ctx, "file_read", json.RawMessage(`{"path":"a"}`)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// Remote's fresh session per call vs one kept go-sdk session (the
// decision in Remote's doc): go test -run '^$' -bench Remote ./internal/tools/
func BenchmarkRemoteCall(b *testing.B) {
	url, _ := sandboxServer(b, nil)
	args := json.RawMessage(`{"path":"missing.txt"}`)
	b.Run("remote-fresh-session", func(b *testing.B) {
		r := newRemote(url, remoteToken)
		for b.Loop() {
			if _, err := r.Call(context.Background(), "file_read", args); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("kept-session", func(b *testing.B) {
		hc := &http.Client{Transport: roundTripFunc(func(req *http.Request) (*http.Response, error) {
			req = req.Clone(req.Context())
			req.Header.Set("Authorization", "Bearer "+remoteToken)
			return http.DefaultTransport.RoundTrip(req)
		})}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, DisableStandaloneSSE: true}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		for b.Loop() {
			if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "file_read", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestRemoteHungSandboxHonoursDeadlines(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hung.Close()
	defer close(release)
	r := newRemote(hung.URL+"/mcp", remoteToken)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			t0 := time.Now()
			_, err := r.Call(ctx, "bash", json.RawMessage(`{"command":"pwd"}`))
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("hung sandbox: %v, want the deadline", err)
			}
			if d := time.Since(t0); d > 3*time.Second {
				t.Errorf("returned after %v", d)
			}
		})
	}
	wg.Wait()
}

// A Remote holds nothing between calls: dropping one without cleanup (as
// the gateway does, one per agent run) leaves no goroutine behind.
func TestRemoteLeavesNoGoroutines(t *testing.T) {
	url, _ := sandboxServer(t, nil)
	warm := newRemote(url, remoteToken)
	mustCall(t, warm, "file_read", `{"path":"missing.txt"}`)
	before := runtime.NumGoroutine()
	for range 20 {
		r := newRemote(url, remoteToken)
		if _, err := r.Tools(context.Background()); err != nil {
			t.Fatal(err)
		}
		mustCall(t, r, "file_read", `{"path":"missing.txt"}`)
	}
	var after int
	for range 100 {
		if after = runtime.NumGoroutine(); after <= before+2 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("goroutines: %d before, %d after 20 Remotes", before, after)
}
