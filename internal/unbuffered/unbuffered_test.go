package unbuffered_test

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/garraia/garra/internal/unbuffered"
)

func TestHeaderOnEventStreamsOnly(t *testing.T) {
	tests := []struct {
		name        string
		contentType string
		send        func(w http.ResponseWriter) // how the handler gets its headers out
		want        string
	}{
		{"sse, WriteHeader", "text/event-stream", func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) }, "no"},
		{"sse, first Write", "text/event-stream", func(w http.ResponseWriter) { _, _ = io.WriteString(w, ": ok\n\n") }, "no"},
		{"sse, Flush first", "text/event-stream", func(w http.ResponseWriter) { _ = http.NewResponseController(w).Flush() }, "no"},
		{"sse with parameters", "Text/Event-Stream; charset=utf-8", func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) }, "no"},
		{"json", "application/json", func(w http.ResponseWriter) { _, _ = io.WriteString(w, "{}") }, ""},
		{"error page", "text/plain; charset=utf-8", func(w http.ResponseWriter) { w.WriteHeader(http.StatusBadRequest) }, ""},
		{"no content type", "", func(w http.ResponseWriter) { w.WriteHeader(http.StatusNoContent) }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := unbuffered.SSE(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if tt.contentType != "" {
					w.Header().Set("Content-Type", tt.contentType)
				}
				tt.send(w)
				// Set after the headers went out: must not reach the client.
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, "")
			}))
			resp := get(t, h)
			if got := resp.Header.Get(unbuffered.Header); got != tt.want {
				t.Fatalf("%s = %q, want %q", unbuffered.Header, got, tt.want)
			}
		})
	}
}

// Events still reach the client one by one through the wrapper: the second
// is written only once the client has read the first.
func TestEventsStillFlushed(t *testing.T) {
	read := make(chan struct{})
	h := unbuffered.SSE(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		_, _ = io.WriteString(w, "data: one\n\n")
		if err := rc.Flush(); err != nil {
			t.Errorf("flush through the wrapper: %v", err)
		}
		select {
		case <-read:
		case <-time.After(10 * time.Second):
			t.Error("the client never saw the first event")
			return
		}
		_, _ = io.WriteString(w, "data: two\n\n")
	}))
	resp := get(t, h)
	if resp.Header.Get(unbuffered.Header) != "no" {
		t.Fatalf("headers: %v", resp.Header)
	}
	sc := bufio.NewScanner(resp.Body)
	var got []string
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			got = append(got, d)
			if d == "one" {
				close(read)
			}
		}
	}
	if strings.Join(got, ",") != "one,two" {
		t.Fatalf("events %q", got)
	}
}

// get serves h on a loopback server for one GET.
func get(t *testing.T, h http.Handler) *http.Response {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}
