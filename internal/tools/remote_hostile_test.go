package tools_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/tools"
)

// hostileSandbox serves MCP on loopback and answers every tools/list with
// what page returns for the n-th request (from 1).
func hostileSandbox(t *testing.T, page func(ctx context.Context, n int64) (*mcp.ListToolsResult, error)) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "hostile", Version: "1"}, nil)
	var n atomic.Int64
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				return page(ctx, n.Add(1))
			}
			return next(ctx, method, req)
		}
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL + "/mcp"
}

func smallTool(i int) *mcp.Tool {
	return &mcp.Tool{Name: "t" + strconv.Itoa(i), Description: "d", InputSchema: map[string]any{"type": "object"}}
}

// A sandbox's tools/list is bounded in pages, tools, bytes per tool and
// time: each hostile answer ends in a clear error, never in a gateway
// that keeps reading.
func TestRemoteToolsBoundsAHostileSandbox(t *testing.T) {
	huge := strings.Repeat("x", tools.MaxRemoteSchemaBytes+1)
	for name, tc := range map[string]struct {
		page func(context.Context, int64) (*mcp.ListToolsResult, error)
		want string
	}{
		"endless pages": {func(_ context.Context, n int64) (*mcp.ListToolsResult, error) {
			return &mcp.ListToolsResult{Tools: []*mcp.Tool{smallTool(int(n))}, NextCursor: "c" + strconv.FormatInt(n, 10)}, nil
		}, "more than 32 pages"},
		"too many tools": {func(context.Context, int64) (*mcp.ListToolsResult, error) {
			var ts []*mcp.Tool
			for i := range tools.MaxRemoteTools + 1 {
				ts = append(ts, smallTool(i))
			}
			return &mcp.ListToolsResult{Tools: ts}, nil
		}, "more than 256 tools"},
		"huge description": {func(context.Context, int64) (*mcp.ListToolsResult, error) {
			tl := smallTool(1)
			tl.Description = huge
			return &mcp.ListToolsResult{Tools: []*mcp.Tool{tl}}, nil
		}, `tool "t1": description of`},
		"huge schema": {func(context.Context, int64) (*mcp.ListToolsResult, error) {
			tl := smallTool(1)
			tl.InputSchema = map[string]any{"type": "object", "description": huge}
			return &mcp.ListToolsResult{Tools: []*mcp.Tool{tl}}, nil
		}, `tool "t1": input schema of`},
		"huge name": {func(context.Context, int64) (*mcp.ListToolsResult, error) {
			tl := smallTool(1)
			tl.Name = strings.Repeat("n", 129)
			return &mcp.ListToolsResult{Tools: []*mcp.Tool{tl}}, nil
		}, "a tool name of 129 bytes"},
	} {
		t.Run(name, func(t *testing.T) {
			url := hostileSandbox(t, tc.page)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			list, err := newRemote(url, remoteToken).Tools(ctx)
			if !errors.Is(err, tools.ErrRemoteToolsTooLarge) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Tools = %d tools, %v; want ErrRemoteToolsTooLarge with %q", len(list), err, tc.want)
			}
		})
	}
}

// A sandbox that never finishes its list is cut at ListTimeout whatever
// the caller's own deadline.
func TestRemoteToolsTimesOutASlowList(t *testing.T) {
	release := make(chan struct{})
	url := hostileSandbox(t, func(ctx context.Context, _ int64) (*mcp.ListToolsResult, error) {
		select {
		case <-ctx.Done():
		case <-release:
		}
		return nil, errors.New("released")
	})
	t.Cleanup(func() { close(release) }) // before the server's Close, which waits for it
	r := tools.NewRemote(tools.RemoteOptions{URL: url, Token: remoteToken, ListTimeout: 300 * time.Millisecond})
	done := make(chan error, 1)
	go func() { _, err := r.Tools(context.Background()); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Tools of a stalled list = %v, want a deadline", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Tools of a stalled list did not return")
	}
}
