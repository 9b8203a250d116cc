package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

func webServer(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	mux := http.NewServeMux()
	mux.HandleFunc("/text", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			t.Errorf("method %s", r.Method)
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprint(w, "hello, world\n")
	})
	mux.HandleFunc("/html", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, `<html><head><title>T</title><style>body{}</style></head><body>
<script>alert("x")</script><h1>Title &amp; more</h1><p>First <b>para</b>.</p><ul><li>one</li><li>two</li></ul><!-- hidden --></body></html>`)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, strings.Repeat("a", 10000))
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no such page", http.StatusNotFound)
	})
	mux.HandleFunc("/png", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00"))
	})
	mux.HandleFunc("/to-file", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
	})
	mux.HandleFunc("/to-text", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/text", http.StatusFound)
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestWebFetch(t *testing.T) {
	srv, _ := webServer(t)
	l := NewLocal(LocalOptions{HTTPClient: srv.Client()})
	tests := []struct {
		name      string
		args      map[string]any
		isError   bool
		has, hasn []string
	}{
		{"text", map[string]any{"url": srv.URL + "/text"}, false, []string{"HTTP 200 OK", "Content-Type: text/plain", "\n\nhello, world\n"}, nil},
		{"html to text", map[string]any{"url": srv.URL + "/html"}, false,
			[]string{"Title & more", "First para.", "- one", "- two"}, []string{"<", "alert", "body{}", "hidden"}},
		{"size cap", map[string]any{"url": srv.URL + "/big", "max_bytes": 100}, false,
			[]string{strings.Repeat("a", 100) + "\n[body truncated at max_bytes=100]"}, []string{strings.Repeat("a", 101)}},
		{"non-2xx", map[string]any{"url": srv.URL + "/missing"}, true, []string{"HTTP 404 Not Found", "no such page"}, nil},
		{"binary", map[string]any{"url": srv.URL + "/png"}, true, []string{"binary content (image/png"}, []string{"PNG"}},
		{"redirect followed", map[string]any{"url": srv.URL + "/to-text"}, false, []string{"hello, world", "Final-URL: " + srv.URL + "/text"}, nil},
		{"redirect to file refused", map[string]any{"url": srv.URL + "/to-file"}, true, []string{"redirect refused", `scheme "file" is not allowed`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, l, ToolWebFetch, tt.args)
			if res.IsError != tt.isError {
				t.Fatalf("IsError = %v: %s", res.IsError, res.Output)
			}
			for _, s := range tt.has {
				if !strings.Contains(res.Output, s) {
					t.Errorf("output lacks %q:\n%s", s, res.Output)
				}
			}
			for _, s := range tt.hasn {
				if strings.Contains(res.Output, s) {
					t.Errorf("output has %q:\n%s", s, res.Output)
				}
			}
		})
	}
}

func TestWebFetchRefusesNonHTTP(t *testing.T) {
	srv, hits := webServer(t)
	l := NewLocal(LocalOptions{HTTPClient: srv.Client()})
	for _, u := range []string{"file:///etc/passwd", "ftp://example.com/x", "gopher://x", "javascript:alert(1)", "/relative", "http://", "HTTP-no-scheme"} {
		res := call(t, l, ToolWebFetch, map[string]any{"url": u})
		if !res.IsError || !strings.HasPrefix(res.Output, "web_fetch: invalid arguments: url: ") {
			t.Errorf("%q: %+v", u, res)
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("server hit %d times", n)
	}
}

func TestHTMLToText(t *testing.T) {
	got := htmlToText("<div>a&nbsp;b</div><br/>c<script type=x>var s = '</div>';</script>\n\n\n\nd")
	if got != "a b\n\nc\n\nd" {
		t.Fatalf("htmlToText = %q", got)
	}
}

// braveDouble is a stand-in for the Brave Search API.
func braveDouble(t *testing.T, status int) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.Method != http.MethodGet || r.URL.Path != "/res/v1/web/search" {
			t.Errorf("request %s %s", r.Method, r.URL.Path)
		}
		if got := r.Header.Get("X-Subscription-Token"); got != "brave-test-key" {
			t.Errorf("X-Subscription-Token = %q", got)
		}
		if q := r.URL.Query(); q.Get("q") != "garra & go" || q.Get("count") != "2" {
			t.Errorf("query %v", q)
		}
		if status != http.StatusOK {
			http.Error(w, `{"error":"bad token brave-test-key"}`, status)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"type":"search","web":{"results":[
			{"title":"Garra <strong>docs</strong>","url":"https://garra.example/docs","description":"The <strong>Garra</strong> agent &amp; tools."},
			{"title":"Second","url":"https://garra.example/2","description":""},
			{"title":"Third","url":"https://garra.example/3","description":"over the count"}]}}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestWebSearch(t *testing.T) {
	srv, hits := braveDouble(t, http.StatusOK)
	l := NewLocal(LocalOptions{BraveAPIKey: "brave-test-key", BraveBaseURL: srv.URL + "/", HTTPClient: srv.Client()})
	res := call(t, l, ToolWebSearch, map[string]any{"query": "garra & go", "count": 2})
	want := "1. Garra docs\n   https://garra.example/docs\n   The Garra agent & tools.\n2. Second\n   https://garra.example/2"
	if res.IsError || res.Output != want {
		t.Fatalf("result %+v\nwant %q", res, want)
	}
	if hits.Load() != 1 {
		t.Fatalf("hits %d", hits.Load())
	}
}

func TestWebSearchErrorHidesKey(t *testing.T) {
	srv, _ := braveDouble(t, http.StatusUnauthorized)
	l := NewLocal(LocalOptions{BraveAPIKey: "brave-test-key", BraveBaseURL: srv.URL, HTTPClient: srv.Client()})
	res := call(t, l, ToolWebSearch, map[string]any{"query": "garra & go", "count": 2})
	if !res.IsError || !strings.Contains(res.Output, "HTTP 401") || strings.Contains(res.Output, "brave-test-key") {
		t.Fatalf("result %+v", res)
	}
}

func TestWebSearchNotRegisteredWithoutKey(t *testing.T) {
	l := NewLocal(LocalOptions{})
	ts, _ := l.Tools(context.Background())
	for _, tool := range ts {
		if tool.Name == ToolWebSearch {
			t.Fatal("web_search listed without a key")
		}
	}
	_, err := l.Call(context.Background(), ToolWebSearch, json.RawMessage(`{"query":"x"}`))
	if !errors.Is(err, ErrUnknownTool) {
		t.Fatalf("err = %v, want ErrUnknownTool", err)
	}
}
