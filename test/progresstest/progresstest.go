// Package progresstest records the MCP progress notifications a go-sdk
// client receives, for tests of servers that report progress.
package progresstest

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Log keeps the notifications in arrival order. The zero value is ready.
type Log struct {
	mu  sync.Mutex
	got []*mcp.ProgressNotificationParams
}

// Handle is a ClientOptions.ProgressNotificationHandler.
func (l *Log) Handle(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, r.Params)
}

// Options are client options that record into l.
func (l *Log) Options() *mcp.ClientOptions {
	return &mcp.ClientOptions{ProgressNotificationHandler: l.Handle}
}

// List is what arrived so far.
func (l *Log) List() []*mcp.ProgressNotificationParams {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got)
}

// Wait waits up to 5 seconds for n notifications (the client hands them to
// its handler asynchronously, so some may trail the result), gives an
// extra one 50 ms to show up, and fails the test on any count but n.
func (l *Log) Wait(t testing.TB, n int) []*mcp.ProgressNotificationParams {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(l.List()) < n && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond)
	got := l.List()
	if len(got) != n {
		t.Fatalf("%d progress notifications, want %d", len(got), n)
	}
	return got
}
