package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/garraia/garra/test/fakes/llmdouble"
	"github.com/garraia/garra/test/mcphttp"
	"github.com/garraia/garra/test/pgtest"
)

// replicaConfig is a gateway on the shared store (or, with sqlite, on its
// own data_dir) with an ask budget.
func replicaConfig(t testing.TB, double *llmdouble.Server, budget int, sqlite ...bool) string {
	t.Helper()
	store := "store: {driver: postgres, dsn_env: GARRA_TEST_DSN}"
	if len(sqlite) > 0 && sqlite[0] {
		store = "store: {driver: sqlite}"
	}
	cfg := fmt.Sprintf(`data_dir: %s
%s
llm: {provider: openrouter, base_url: %s}
gateway:
  listen: 127.0.0.1:0
  api_key_file: %s
  rate_limit: {requests_per_minute: 100000}
  mcp_http: {enabled: true, allow_ask: true, ask_budget_per_minute: %d}
`, t.TempDir(), store, double.OpenAIBaseURL(), secretFile(t, e2eOwnerKey), budget)
	path := filepath.Join(t.TempDir(), "config.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type replicaProc struct {
	base string
	logs *watchedLog
}

func startReplica(t testing.TB, cfg, dsn string) replicaProc {
	t.Helper()
	env := testEnv(t, "OPENROUTER_API_KEY="+fakeKey, "GARRA_TEST_DSN="+dsn)
	addr, logs := startChild(t, t.TempDir(), env, gatewayListeningLine, "gateway", "--config", cfg)
	return replicaProc{base: "http://" + addr, logs: logs}
}

// askAll makes n garra_ask calls, spread round-robin over the replicas,
// at most 64 at a time, and counts the outcomes by kind ("ok" for an
// answer, "error: …" for a call that got no envelope).
func askAll(t *testing.T, reps []replicaProc, n int) map[string]int {
	t.Helper()
	var mu sync.Mutex
	counts := map[string]int{}
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			text, _, err := mcphttp.Client{Base: reps[i%len(reps)].base}.ToolText(ctx, e2eOwnerKey, "garra_ask", map[string]any{"message": "ping"})
			kind := "ok"
			if err != nil {
				kind = "error: " + err.Error()
			} else {
				var env struct {
					OK    bool `json:"ok"`
					Error struct {
						Kind string `json:"kind"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(text), &env); err != nil {
					kind = "error: " + text
				} else if !env.OK {
					kind = env.Error.Kind
				}
			}
			mu.Lock()
			counts[kind]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return counts
}

// Three `garra gateway` processes on one PostgreSQL: an ask budget of 50
// per minute admits exactly 50 of 1000 concurrent calls spread over them,
// the model sees exactly 50 requests, and killing a replica and starting
// another refills nothing.
func TestGatewayReplicasShareTheBudget(t *testing.T) {
	dsn := pgtest.DSN(t)
	double := llmdouble.New(t) // echo
	cfg := replicaConfig(t, double, 50)
	var reps []replicaProc
	for range 3 {
		reps = append(reps, startReplica(t, cfg, dsn))
	}
	t0 := time.Now()
	counts := askAll(t, reps, 1000)
	took := time.Since(t0)
	if counts["ok"] != 50 || counts["over_budget"] != 950 || len(double.Requests()) != 50 {
		t.Fatalf("outcomes %v, the model saw %d requests; want 50 answers and 950 over_budget", counts, len(double.Requests()))
	}
	t.Logf("1000 concurrent garra_ask over 3 replicas in %s: %v; the model saw %d", took.Round(time.Millisecond), counts, len(double.Requests()))

	// SIGKILL a replica (no drain, no goodbye) and start a new one: the
	// spend is in the database, so the window stays spent.
	if err := syscall.Kill(reps[2].logs.pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	reps[2] = startReplica(t, cfg, dsn)
	if after := askAll(t, reps, 30); after["over_budget"] != 30 || len(double.Requests()) != 50 {
		t.Fatalf("after a replica was killed and replaced: %v, the model saw %d; the budget was refilled", after, len(double.Requests()))
	}
}

// BenchmarkGatewayReplicas is garra_ask against the LLM double through 1,
// 2 and 3 `garra gateway` processes on one PostgreSQL, and through one on
// SQLite: calls/s and per-call p50/p99, 16 callers spread round-robin.
// Every call is charged to the shared ask budget (set high enough never to
// refuse). On a machine with few cores more replicas add no throughput:
// they share the CPU; what they buy is availability.
func BenchmarkGatewayReplicas(b *testing.B) {
	for _, tc := range []struct {
		name     string
		replicas int
		sqlite   bool
	}{{"sqlite-1", 1, true}, {"postgres-1", 1, false}, {"postgres-2", 2, false}, {"postgres-3", 3, false}} {
		b.Run(tc.name, func(b *testing.B) {
			dsn := ""
			if !tc.sqlite {
				dsn = pgtest.DSN(b)
			}
			double := llmdouble.New(b)
			cfg := replicaConfig(b, double, 1_000_000, tc.sqlite)
			var reps []replicaProc
			for range tc.replicas {
				reps = append(reps, startReplica(b, cfg, dsn))
			}
			call := func(i int) (time.Duration, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				t0 := time.Now()
				text, isErr, err := mcphttp.Client{Base: reps[i%len(reps)].base}.ToolText(ctx, e2eOwnerKey, "garra_ask", map[string]any{"message": "ping"})
				if err == nil && isErr {
					err = fmt.Errorf("refused: %s", text)
				}
				return time.Since(t0), err
			}
			for i := range 2 * len(reps) { // warm the connections
				if _, err := call(i); err != nil {
					b.Fatal(err)
				}
			}
			lat := make([]time.Duration, b.N)
			var next atomic.Int64
			var failed atomic.Value
			b.ResetTimer()
			t0 := time.Now()
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					for i := int(next.Add(1)) - 1; i < b.N; i = int(next.Add(1)) - 1 {
						d, err := call(i)
						if err != nil {
							failed.Store(err)
						}
						lat[i] = d
					}
				})
			}
			wg.Wait()
			elapsed := time.Since(t0)
			b.StopTimer()
			if err, _ := failed.Load().(error); err != nil {
				b.Fatal(err)
			}
			slices.Sort(lat)
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
