package main

import (
	"context"
	"io"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/test/fakes/llmdouble"
)

// BenchmarkStartupToInitialize measures process start to the initialize
// response of `garra mcp-server`, the latency a host sees on every launch.
func BenchmarkStartupToInitialize(b *testing.B) {
	env := testEnv(b)
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil)
	for b.Loop() {
		cmd := exec.Command(garraBin, "mcp-server")
		cmd.Env = env
		cmd.Stderr = io.Discard
		cs, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = cs.Close()
		b.StartTimer()
	}
}

// BenchmarkAskRoundTrip measures one garra_ask call through the stdio
// server to the loopback provider double and back.
func BenchmarkAskRoundTrip(b *testing.B) {
	double := llmdouble.New(b) // echo mode
	cfg := writeConfig(b, "openrouter", double.OpenAIBaseURL())
	cmd := exec.Command(garraBin, "mcp-server", "--config", cfg)
	cmd.Env = testEnv(b, "OPENROUTER_API_KEY="+fakeKey)
	cmd.Stderr = io.Discard
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "0"}, nil).Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: "garra_ask", Arguments: map[string]any{"message": "ping"}}
	for b.Loop() {
		res, err := cs.CallTool(context.Background(), params)
		if err != nil || res.IsError {
			b.Fatalf("%v %+v", err, res)
		}
	}
}
