package mcpprogress_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/mcpprogress"
)

// connect serves one tool that reports steps tool calls named by names,
// and returns a client session whose progress notices land in got.
func connect(t *testing.T, names []string) (*mcp.ClientSession, func() []*mcp.ProgressNotificationParams, *bool) {
	t.Helper()
	ctx := context.Background()
	s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "0"}, nil)
	hadReporter := new(bool)
	s.AddTool(&mcp.Tool{Name: "run", InputSchema: map[string]any{"type": "object"}},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			report := mcpprogress.Reporter(req)
			*hadReporter = report != nil
			if report != nil {
				for i, n := range names {
					report(ctx, i+1, n)
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, r.Params)
		},
	})
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, func() []*mcp.ProgressNotificationParams {
		mu.Lock()
		defer mu.Unlock()
		return append([]*mcp.ProgressNotificationParams(nil), got...)
	}, hadReporter
}

func TestReportsEachStepWithTheClientsToken(t *testing.T) {
	names := []string{"bash", "file_read", "bash"}
	cs, got, _ := connect(t, names)
	params := &mcp.CallToolParams{Name: "run", Arguments: map[string]any{}}
	params.SetProgressToken("tok-7")
	if _, err := cs.CallTool(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	// Notifications and the result travel in order on one connection, but
	// the client hands notifications to its handler asynchronously.
	deadline := time.Now().Add(5 * time.Second)
	for len(got()) < len(names) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	notes := got()
	if len(notes) != len(names) {
		t.Fatalf("%d notifications, want %d", len(notes), len(names))
	}
	for i, n := range notes {
		if n.ProgressToken != "tok-7" || n.Progress != float64(i+1) || n.Message != names[i] || n.Total != 0 {
			t.Errorf("notification %d: %+v", i, n)
		}
	}
}

func TestNoTokenNoReporter(t *testing.T) {
	cs, got, hadReporter := connect(t, []string{"bash"})
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	if *hadReporter || len(got()) != 0 {
		t.Fatalf("reporter %v, notifications %d without a progress token", *hadReporter, len(got()))
	}
	if mcpprogress.Reporter(nil) != nil {
		t.Fatal("a nil request has a reporter")
	}
}
