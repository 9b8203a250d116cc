package mcpserver

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/ask"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/llm"
)

// recordingCore is an ask core on cfg whose every provider is prov.
func recordingCore(cfg *config.Config, prov *recordingProvider) *ask.Core {
	return &ask.Core{Config: cfg, Getenv: func(string) string { return "test-key" },
		NewProvider: func(llm.Options) (llm.Provider, error) { return prov, nil }}
}

// dial connects a client named clientName to the server New builds from
// o, over in-memory transports.
func dial(t *testing.T, o Options, clientName string) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := New(o).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: clientName, Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close(); _ = ss.Wait() })
	return cs
}
