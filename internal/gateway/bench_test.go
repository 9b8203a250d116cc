package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/garraia/garra/internal/audit"
	"github.com/garraia/garra/internal/config"
	"github.com/garraia/garra/internal/gateway"
	"github.com/garraia/garra/internal/mcppolicy"
	"github.com/garraia/garra/internal/redact"
)

// BenchmarkMCPHTTPOverhead: what the gateway's layers cost on top of the
// go-sdk. The same raw JSON-RPC POSTs (what a plain curl client sends) go,
// from benchConcurrency keep-alive client goroutines, to
//
//   - gateway: gateway.New(...).Handler() with every layer of POST /mcp (the
//     per-IP rate limiter, with a limit high enough never to refuse; origin
//     guard, Host check, bearer gate, Accept rule, the stateless JSON SDK
//     transport, the per-caller server and its middlewares, metrics, the
//     call's log line and the audit file), logging as `garra gateway` does
//     (text, through the redactor) into io.Discard;
//   - gateway_nolog: the same with a discarding logger, which isolates what
//     the log lines cost;
//   - bare: mcp.NewStreamableHTTPHandler (Stateless, JSONResponse) serving
//     one trivial tool, nothing else;
//   - paired: gateway and bare in the same sub-benchmark, each worker
//     alternating one request to each, so both see the same machine load.
//     On a shared, busy machine run-to-run noise is larger than the
//     overhead; this row's ratios are the ones to read.
//
// The single-target rows report req/s and p50/p99 latency in ms; ns/op is
// wall time per request with benchConcurrency in flight; B/op and
// allocs/op are client and server together (one process). The paired row
// reports each side's p50/p99 and the ratios gateway/bare of the mean and
// the p50 latency (ns/op there is per pair). The gateway's tools/list
// answers with the owner's four tools and their schemas, the bare one with
// a single tool, so part of that gap is payload.

const (
	benchConcurrency = 8
	benchKey         = "bench-owner-key-0123456789abcdef"
	benchListBody    = `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`
)

func benchCallBody(tool string) string {
	return `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
}

// benchGatewayHandler builds the gateway as `garra gateway` does, minus the
// listener: owner key, bridge on, audit file in a temp dir.
func benchGatewayHandler(b *testing.B, logs bool, opts ...func(*gateway.Options)) http.Handler {
	b.Helper()
	cfg := config.Default()
	cfg.DataDir = b.TempDir()
	cfg.Gateway.APIKey = benchKey
	cfg.Gateway.MCPHTTP.Enabled = true
	// High enough that the limiter, which stays in the stack, never refuses.
	cfg.Gateway.RateLimit.RequestsPerMinute = 1 << 30
	log := slog.New(slog.DiscardHandler)
	if logs {
		log = slog.New(redact.NewHandler(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}), redact.Default()))
	}
	al := audit.New(audit.Options{Path: filepath.Join(cfg.DataDir, "audit.jsonl"), Logger: log})
	b.Cleanup(func() { _ = al.Close() })
	o := gateway.Options{
		Config: cfg, Getenv: func(string) string { return "" }, Logger: log, Version: "bench", Audit: al,
	}
	for _, f := range opts {
		f(&o)
	}
	g, err := gateway.New(o)
	if err != nil {
		b.Fatal(err)
	}
	return g.Handler()
}

// benchBareHandler is the go-sdk alone: one tool, stateless, JSON responses.
func benchBareHandler() http.Handler {
	s := mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "bench"}, nil)
	s.AddTool(&mcp.Tool{Name: "status", Description: "Trivial status.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: `{"ok":true,"version":"bench"}`}}}, nil
		})
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	return mux
}

// benchLeg is one endpoint and the body POSTed to it.
type benchLeg struct {
	name    string
	handler http.Handler
	body    string
}

func BenchmarkMCPHTTPOverhead(b *testing.B) {
	methods := []struct {
		name           string
		gateway, plain string // bodies for the gateway and the bare server
	}{
		{"tools_list", benchListBody, benchListBody},
		{"tools_call_status", benchCallBody(mcppolicy.ToolStatus), benchCallBody("status")},
	}
	for _, m := range methods {
		gw := func(b *testing.B) benchLeg { return benchLeg{"gateway", benchGatewayHandler(b, true), m.gateway} }
		quiet := func(b *testing.B) benchLeg {
			return benchLeg{"gateway_nolog", benchGatewayHandler(b, false), m.gateway}
		}
		bare := func(*testing.B) benchLeg { return benchLeg{"bare", benchBareHandler(), m.plain} }
		for _, row := range []struct {
			name string
			legs []func(*testing.B) benchLeg
		}{
			{"gateway", []func(*testing.B) benchLeg{gw}},
			{"gateway_nolog", []func(*testing.B) benchLeg{quiet}},
			{"bare", []func(*testing.B) benchLeg{bare}},
			{"paired", []func(*testing.B) benchLeg{gw, bare}},
		} {
			b.Run(m.name+"/"+row.name, func(b *testing.B) {
				legs := make([]benchLeg, len(row.legs))
				for i, f := range row.legs {
					legs[i] = f(b)
				}
				benchPosts(b, legs)
			})
		}
	}
}

// benchStats are one leg's latencies, sorted.
type benchStats []time.Duration

func (s benchStats) pct(p float64) float64 {
	return float64(s[min(len(s)-1, int(float64(len(s))*p))].Microseconds()) / 1000
}

func (s benchStats) meanMS() float64 {
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return float64(sum.Microseconds()) / 1000 / float64(len(s))
}

// benchPosts serves each leg on its own loopback server and, from
// benchConcurrency goroutines, sends one request to every leg in turn per
// b.Loop iteration; then it reports the metrics described above.
func benchPosts(b *testing.B, legs []benchLeg) {
	tr := &http.Transport{MaxIdleConns: 2 * benchConcurrency, MaxIdleConnsPerHost: benchConcurrency, MaxConnsPerHost: benchConcurrency}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	urls := make([]string, len(legs))
	for i, l := range legs {
		srv := httptest.NewServer(l.handler)
		defer srv.Close()
		urls[i] = srv.URL + "/mcp"
		// Once, untimed: the answer is a JSON-RPC result, not a refusal.
		benchCheck(b, client, urls[i], l.body)
	}

	work := make(chan struct{})
	lat := make([][][]time.Duration, benchConcurrency) // worker, leg, sample
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	for w := range benchConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			mine := make([][]time.Duration, len(legs))
			for i := range mine {
				mine[i] = make([]time.Duration, 0, 4096)
			}
			for range work {
				for i, l := range legs {
					t0 := time.Now()
					err := benchSend(client, urls[i], l.body)
					mine[i] = append(mine[i], time.Since(t0))
					if err != nil {
						errOnce.Do(func() { firstErr = fmt.Errorf("%s: %w", l.name, err) })
					}
				}
			}
			lat[w] = mine
		}()
	}
	start := time.Now()
	for b.Loop() {
		work <- struct{}{}
	}
	// The last requests are still in flight: count them in the timing.
	b.StartTimer()
	close(work)
	wg.Wait()
	b.StopTimer()
	elapsed := time.Since(start)
	if firstErr != nil {
		b.Fatalf("request failed: %v", firstErr)
	}

	stats := make([]benchStats, len(legs))
	for i := range legs {
		for w := range lat {
			stats[i] = append(stats[i], lat[w][i]...)
		}
		slices.Sort(stats[i])
	}
	if len(legs) == 1 {
		s := stats[0]
		b.ReportMetric(float64(len(s))/elapsed.Seconds(), "req/s")
		b.ReportMetric(s.pct(0.50), "p50-ms")
		b.ReportMetric(s.pct(0.99), "p99-ms")
		return
	}
	for i, l := range legs {
		b.ReportMetric(stats[i].pct(0.50), l.name+"-p50-ms")
		b.ReportMetric(stats[i].pct(0.99), l.name+"-p99-ms")
	}
	b.ReportMetric(stats[0].meanMS()/stats[1].meanMS(), "mean-ratio")
	b.ReportMetric(stats[0].pct(0.50)/stats[1].pct(0.50), "p50-ratio")
	b.ReportMetric((stats[0].meanMS()-stats[1].meanMS())*1000, "mean-extra-us")
}

func benchRequest(url, body string) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(body)))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+benchKey) // the bare handler ignores it
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	return req, nil
}

func benchSend(client *http.Client, url, body string) error {
	req, err := benchRequest(url, body)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return err
}

// benchCheck sends body once and fails unless the answer is a JSON-RPC
// result (for a tool call, one that is not an error).
func benchCheck(b *testing.B, client *http.Client, url, body string) {
	b.Helper()
	req, err := benchRequest(url, body)
	if err != nil {
		b.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	var msg struct {
		Result *struct {
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &msg) != nil || msg.Result == nil || msg.Result.IsError {
		b.Fatalf("HTTP %d %s", resp.StatusCode, raw)
	}
}
