package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/garraia/garra/test/fakes/llmdouble"
	"github.com/garraia/garra/test/mcphttp"
	"github.com/garraia/garra/test/pgtest"
)

// replicaConfig is a gateway on the shared store with an ask budget.
func replicaConfig(t *testing.T, double *llmdouble.Server, budget int) string {
	t.Helper()
	cfg := fmt.Sprintf(`data_dir: %s
store: {driver: postgres, dsn_env: GARRA_TEST_DSN}
llm: {provider: openrouter, base_url: %s}
gateway:
  listen: 127.0.0.1:0
  api_key_file: %s
  rate_limit: {requests_per_minute: 100000}
  mcp_http: {enabled: true, allow_ask: true, ask_budget_per_minute: %d}
`, t.TempDir(), double.OpenAIBaseURL(), secretFile(t, e2eOwnerKey), budget)
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

func startReplica(t *testing.T, cfg, dsn string) replicaProc {
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
